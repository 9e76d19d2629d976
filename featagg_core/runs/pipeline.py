"""The fitted pipeline of a run: one object, saved and loaded as one artifact.

:class:`Pipeline` holds every fitted step of a run (``defrag``, ``classifier``,
``reranker``, ``imputer``, ``feature_clustering``, ``selector``, ``vocabulary``; absent
steps are None), the canonical ``spec`` it was fitted from, the ``split_id`` and
``dataset_fingerprint`` of the training rows, and works on *raw* inputs:
``predict_scores(X_raw, k)`` imputes (FIAT), agglomerates (DEFRAG), classifies and re-ranks
(REFRAG) in that order; ``transform`` gives the features a downstream model sees.

It is built by :func:`featagg_core.experiment.run_pipeline` (never by hand, except
:func:`as_pipeline` wrapping an older artifact or bundle) and is the artifact class
"Pipeline" (:mod:`featagg_core.artifacts.store`): every step is stored through its own
``_artifact_state`` with its arrays prefixed ``<step>.``, so loading needs no pickle and
only classes of the fixed artifact table (plus the two step classes below).
"""
from __future__ import annotations

import copy
from numbers import Integral
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from featagg_core.artifacts.registry import ARTIFACT_CLASS_NAMES, artifact_class
from featagg_core.utils.docstrings import fill_doc
from featagg_core.utils.products import cluster_membership
from featagg_core.utils.validation import Interval, Options, validate_params

__all__ = ["Pipeline", "FeatureClusters", "FeatureRanking", "as_pipeline", "STEPS"]

#: the step attributes of a Pipeline, in the order data flows through them
STEPS = ("imputer", "defrag", "feature_clustering", "classifier", "reranker", "selector",
         "vocabulary")


def _as_csr(X, name="X") -> sp.csr_matrix:
    if not sp.issparse(X):
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
        X = sp.csr_matrix(arr)
    return sp.csr_matrix(X)


# ----------------------------------------------------------------------------- steps
class FeatureClusters(BaseEstimator):
    """A flat feature clustering (a baseline of DEFRAG: k-means, random balanced, Ward),
    used like a fitted Defrag: ``labels_``, ``n_clusters_``, ``transform`` (sum of each
    cluster's features, ``X @ G``) and ``membership_matrix``.

    Built by :func:`featagg_core.experiment.run_pipeline` from
    :mod:`featagg_core.agglomeration.clustering` on the training rows' feature representation.
    """

    #: what every ``__init__`` parameter may be (checked when the labels are set, which is
    #: this step's fit)
    _parameter_constraints = {
        "kind": [Options(str, ("kmeans", "random_balanced", "ward"))],
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "representation": [Options(str, ("XY", "X"))],
        "max_features": [None, Interval(Integral, 1, None, closed="left")],
        "random_state": [None, Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, kind="kmeans", n_clusters=2, representation="XY", max_features=None,
                 random_state=0):
        self.kind = kind
        self.n_clusters = n_clusters
        self.representation = representation
        self.max_features = max_features
        self.random_state = random_state

    def _set(self, labels, n_features):
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        labels = np.asarray(labels, dtype=np.int64)
        if labels.ndim != 1 or labels.shape[0] != n_features:
            raise ValueError(f"a feature clustering needs one cluster id per feature "
                             f"({n_features}), got shape {labels.shape}")
        if labels.size and labels.min() < 0:
            raise ValueError("feature cluster ids must be >= 0")
        self.labels_ = labels
        self.n_clusters_ = int(labels.max()) + 1 if labels.size else 0
        self.n_features_in_ = int(n_features)
        self.cluster_sizes_ = np.bincount(labels, minlength=self.n_clusters_).astype(np.int64)
        return self

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("this FeatureClusters is not fitted yet")

    @fill_doc
    def membership_matrix(self) -> sp.csr_matrix:
        """The 0/1 d x K matrix G with ``G[j, labels_[j]] = 1``.

        {membership_returns}

        Raises
        ------
        NotFittedError
            Before the labels are set.
        """
        self._check_fitted()
        return cluster_membership(self.labels_, self.n_clusters_, self.n_features_in_)

    def transform(self, X):
        """n x K: each cluster's features summed (``X @ G``, sparse).

        Parameters
        ----------
        X : sparse or dense matrix (n, d)
            Points with the features the clustering was fitted on.

        Returns
        -------
        csr_matrix of float32 (n, K)

        Raises
        ------
        NotFittedError
            Before the labels are set.
        ValueError
            For another number of columns.
        """
        self._check_fitted()
        X = _as_csr(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but this clustering was fitted "
                             f"on {self.n_features_in_}")
        out = sp.csr_matrix(X @ self.membership_matrix(), dtype=np.float32)
        out.sort_indices()
        return out

    def _artifact_state(self):
        self._check_fitted()
        return {"n_features_in_": self.n_features_in_}, {"labels_": self.labels_}

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        return cls(**params)._set(arrays["labels_"], int(meta["n_features_in_"]))


class FeatureRanking(BaseEstimator):
    """A fitted feature ranking of a graph feature-selection baseline (Laplacian score,
    SPEC, NDFS, variance, random, all features): ``scores_`` (one per feature),
    ``order_`` (best first; ties to the lower index, non-finite scores last) and
    ``select(d)``. ``params`` are the spec's, kept for the record."""

    #: what every ``__init__`` parameter may be (checked when the scores are set, which is
    #: this step's fit)
    _parameter_constraints = {
        "kind": [Options(str, ("bmgufs", "laplacian", "spec", "ndfs", "variance", "random",
                               "all"))],
        "params": [None, dict],
    }

    def __init__(self, kind="variance", params=None):
        self.kind = kind
        self.params = params

    def _set(self, scores, larger_is_better: bool):
        from featagg_core.graph.baselines import rank_features
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        self.scores_ = np.asarray(scores, dtype=np.float64)
        self.larger_is_better_ = bool(larger_is_better)
        self.order_ = rank_features(self.scores_, self.larger_is_better_)
        self.n_features_in_ = int(self.scores_.shape[0])
        return self

    def select(self, d) -> np.ndarray:
        """Indices of the ``d`` best features (all of them for ``d=None``).

        Parameters
        ----------
        d : int or None
            How many features.

        Returns
        -------
        int64 array
            Best first (a copy).

        Raises
        ------
        NotFittedError
            Before the scores are set.
        """
        if not hasattr(self, "order_"):
            raise NotFittedError("this FeatureRanking is not fitted yet")
        return self.order_.copy() if d is None else self.order_[:int(d)].copy()

    def _artifact_state(self):
        return ({"larger_is_better_": self.larger_is_better_},
                {"scores_": self.scores_, "order_": self.order_})

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(**params)
        obj.scores_ = np.asarray(arrays["scores_"], np.float64)
        obj.order_ = np.asarray(arrays["order_"], np.int64)
        obj.larger_is_better_ = bool(meta["larger_is_better_"])
        obj.n_features_in_ = int(obj.scores_.shape[0])
        if obj.order_.shape != obj.scores_.shape:
            raise ValueError("order_ and scores_ differ in length")
        return obj


#: step classes that only live inside a Pipeline artifact
LOCAL_STEP_CLASSES = {"FeatureClusters": FeatureClusters, "FeatureRanking": FeatureRanking}


def _step_class(name: str):
    if name in LOCAL_STEP_CLASSES:
        return LOCAL_STEP_CLASSES[name]
    if name == "Pipeline" or name not in ARTIFACT_CLASS_NAMES:
        raise ValueError(f"unknown pipeline step class {name!r}")
    return artifact_class(name)


def _state_bytes(obj) -> int:
    return int(sum(np.asarray(a).nbytes for a in obj._artifact_state()[1].values()))


# ----------------------------------------------------------------------------- pipeline
class Pipeline:
    """The fitted steps of one run, applied to raw inputs (see the module docstring).

    Attributes
    ----------
    defrag, classifier, reranker, imputer, feature_clustering, selector, vocabulary
        The fitted steps (None when absent). With ``defrag.per_tree`` the classifier is a
        :class:`~featagg_core.xmlc.ktxmlc.DefragKTXMLC` (it agglomerates itself) and ``defrag``
        is its first member's Defrag (REFRAG/FIAT and ``transform`` use it). ``vocabulary``
        is a :class:`~featagg_core.vocab.compressor.ColumnCompression`.
    spec : dict, the canonical spec
    split_id, dataset_fingerprint : str or None (None for wrapped legacy artifacts)
    split_settings : dict or None, ``how``, ``test_size``, ``valid_size``,
        ``random_state`` of the split it was fitted on (``make_split(data, **...)`` remakes
        it; the CLI's ``evaluate`` does)
    n_features_in_, n_labels_ : int or None
    selected_ : int64 array or None, the selected feature columns (feature selection)
    columns_ : list or None, the compressed columns (vocabulary)
    """

    #: what every ``__init__`` parameter may be (the steps, ``**steps``, are fitted
    #: estimators, not parameters). A Pipeline has no ``fit`` of its own: its fit is
    #: :func:`featagg_core.experiment.run_pipeline`, which checks ``spec`` (through
    #: ``canonical_spec``, naming the key) before anything is fitted. ``split_id`` and
    #: ``dataset_fingerprint`` are provenance written by ``run_pipeline`` (and read back
    #: from an artifact), not parameters: ``get_params`` has only ``spec``.
    _parameter_constraints = {
        "spec": [dict, None],
        "split_id": "no_validation",
        "dataset_fingerprint": "no_validation",
    }

    def __init__(self, spec: Optional[dict] = None, split_id: Optional[str] = None,
                 dataset_fingerprint: Optional[str] = None, **steps):
        unknown = set(steps) - set(STEPS)
        if unknown:
            raise ValueError(f"unknown pipeline step {sorted(unknown)[0]!r}")
        self.spec = spec if spec is not None else {}
        self.split_id = split_id
        self.dataset_fingerprint = dataset_fingerprint
        for name in STEPS:
            setattr(self, name, steps.get(name))
        self.n_features_in_ = None
        self.n_labels_ = None
        self.selected_ = None
        self.columns_ = None
        self.split_settings = None

    def __sklearn_clone__(self):
        """An unfitted Pipeline with a copy of the same ``spec``, ``split_id`` and
        ``dataset_fingerprint`` (no fitted steps), for :func:`sklearn.base.clone`."""
        return type(self)(spec=copy.deepcopy(self.spec), split_id=self.split_id,
                          dataset_fingerprint=self.dataset_fingerprint)

    def _check_fitted(self):
        if self.selected_ is None and all(getattr(self, s) is None for s in STEPS):
            raise NotFittedError("this Pipeline has no fitted step yet: it is built by "
                                 "featagg_core.experiment.run_pipeline (or loaded)")

    def __repr__(self):
        steps = ", ".join(f"{s}={type(getattr(self, s)).__name__}" for s in STEPS
                          if getattr(self, s) is not None)
        return f"Pipeline({steps}, split_id={self.split_id!r})"

    # -- what it is ------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """"classifier", "agglomeration", "feature_clustering", "feature_selection" or
        "vocabulary".

        Returns
        -------
        str

        Raises
        ------
        ValueError
            For a Pipeline without any fitted step.
        """
        if self.classifier is not None:
            return "classifier"
        if self.feature_clustering is not None:
            return "feature_clustering"
        if self.selector is not None or self.selected_ is not None:
            return "feature_selection"
        if self.vocabulary is not None:
            return "vocabulary"
        if self.defrag is not None:
            return "agglomeration"
        raise ValueError("this Pipeline has no fitted step")

    @property
    def per_tree(self) -> bool:
        """Whether the classifier is a per-tree :class:`~featagg_core.xmlc.ktxmlc.DefragKTXMLC` (it
        agglomerates itself).

        Returns
        -------
        bool
        """
        return type(self.classifier).__name__ == "DefragKTXMLC"

    @property
    def shortlist(self) -> int:
        """Labels the classifier hands to the re-ranker per point (0 without one).

        Returns
        -------
        int
        """
        if self.reranker is None:
            return 0
        return int(self.spec.get("rerank", {}).get("shortlist",
                                                    getattr(self.reranker, "shortlist_size",
                                                            100)))

    def clustering(self):
        """The feature clustering of an agglomeration / feature-clustering pipeline (the
        object with ``labels_``, ``n_clusters_``, ``transform``).

        Returns
        -------
        FeatureClusters or Defrag or None
        """
        return self.feature_clustering if self.feature_clustering is not None else self.defrag

    # -- applying it -----------------------------------------------------------------
    def _check_X(self, X):
        X = _as_csr(X)
        if self.n_features_in_ is not None and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]:,} features; this pipeline was fitted on "
                             f"{self.n_features_in_:,}")
        return X

    def _features(self, X):
        """What the classifier's feature step does to (already imputed) raw X."""
        if self.per_tree or self.defrag is None:
            return X
        return self.defrag.transform(X)

    def scores(self, X_raw, k: int = 5, *, rerank: bool = True, impute: bool = True):
        """``(final, base)`` score matrices (csr n x L) of raw points.

        ``base`` are the classifier's (its top ``max(k, shortlist)`` when there is a
        re-ranker), ``final`` the re-ranked top k (``base`` itself without re-ranker).

        Parameters
        ----------
        X_raw : sparse or dense matrix (n, d)
            Raw points (the features the pipeline was fitted on).
        k : int, default 5
            Labels per point.
        rerank : bool, default True
            ``False`` leaves the re-ranking step out.
        impute : bool, default True
            ``False`` leaves the FIAT imputation out.

        Returns
        -------
        final, base : csr_matrix (n, L)

        Raises
        ------
        NotFittedError
            For a Pipeline without any fitted step.
        ValueError
            Without a classifier, for ``k < 1``, or X with another number of features.
        """
        self._check_fitted()
        if self.classifier is None:
            raise ValueError("this pipeline has no classifier: it does not predict labels")
        k = int(k)
        if k < 1:
            raise ValueError(f"k must be a positive integer, got {k}")
        X = self._check_X(X_raw)
        if impute and self.imputer is not None:
            X = self.imputer.transform(X)
        use_rerank = rerank and self.reranker is not None
        width = max(k, self.shortlist) if use_rerank else k
        base = self.classifier.predict_scores(self._features(X), k=width)
        if not use_rerank:
            return base, base
        return self.reranker.rerank(X, base, k=k), base

    def predict_scores(self, X_raw, k: int = 5):
        """csr n x L of each raw point's top-k label scores: FIAT imputation (when the
        pipeline has it), DEFRAG agglomeration, the classifier, REFRAG re-ranking. REFRAG
        compares prototypes with the (imputed) raw point.

        Parameters
        ----------
        X_raw : sparse or dense matrix (n, d)
            Raw points.
        k : int, default 5
            Labels per point.

        Returns
        -------
        csr_matrix (n, L)

        Raises
        ------
        NotFittedError
            For a Pipeline without any fitted step.
        ValueError
            As :meth:`scores`.
        """
        return self.scores(X_raw, k)[0]

    def transform(self, X_raw):
        """The features a downstream model sees: agglomerated (DEFRAG / a feature
        clustering; after FIAT when present), the selected columns (feature selection), or
        the bucket ids of the compressed columns (vocabulary: a DataFrame from a table).

        Parameters
        ----------
        X_raw : sparse or dense matrix (n, d), or a table
            Raw points (a table for a vocabulary pipeline).

        Returns
        -------
        csr_matrix or pandas.DataFrame

        Raises
        ------
        NotFittedError
            For a Pipeline without any fitted step.
        ValueError
            For X with another number of features.
        """
        self._check_fitted()
        if self.vocabulary is not None:
            return self.vocabulary.transform(X_raw)
        X = self._check_X(X_raw)
        if self.selected_ is not None:
            return X[:, np.asarray(self.selected_, np.int64)]
        if self.imputer is not None:
            X = self.imputer.transform(X)
        if self.feature_clustering is not None:
            return self.feature_clustering.transform(X)
        if self.defrag is not None:
            return self.defrag.transform(X)
        return X

    # -- sizes -----------------------------------------------------------------------
    def _stored_steps(self) -> Dict[str, Any]:
        out = {}
        for name in STEPS:
            obj = getattr(self, name)
            if obj is None or name == "vocabulary":
                continue
            if name == "defrag" and self.per_tree:
                continue                       # stored (and sized) inside the classifier
            out[name] = obj
        return out

    def model_sizes(self) -> Dict[str, int]:
        """Bytes of the arrays each step needs (as stored in an artifact), and ``total``.

        Returns
        -------
        dict
            Step name -> bytes, plus ``"total"``.
        """
        sizes = {name: _state_bytes(obj) for name, obj in self._stored_steps().items()}
        if self.vocabulary is not None:
            sizes["vocabulary"] = int(sum(_state_bytes(vc) for vc in
                                          self.vocabulary.compressors.values()))
        if self.selected_ is not None:
            sizes["selector"] = sizes.get("selector", 0) + int(np.asarray(self.selected_).nbytes)
        sizes["total"] = int(sum(sizes.values()))
        return sizes

    @property
    def model_size_bytes_(self) -> int:
        """Bytes of the arrays of all steps (``model_sizes()["total"]``).

        Returns
        -------
        int
        """
        return self.model_sizes()["total"]

    # -- artifacts protocol ----------------------------------------------------------
    def get_params(self, deep: bool = False) -> dict:
        """The parameters as artifacts store them: a copy of ``spec`` (the steps are fitted
        state, ``split_id`` / ``dataset_fingerprint`` are provenance in the artifact's meta).

        Parameters
        ----------
        deep : bool, default False
            Ignored.

        Returns
        -------
        dict
            ``{"spec": <deep copy of spec>}``.
        """
        return {"spec": copy.deepcopy(self.spec)}

    def _artifact_state(self):
        meta: Dict[str, Any] = {"split_id": self.split_id,
                                "split_settings": self.split_settings,
                                "dataset_fingerprint": self.dataset_fingerprint,
                                "n_features_in_": self.n_features_in_,
                                "n_labels_": self.n_labels_, "steps": {},
                                "defrag_in_classifier": bool(self.per_tree
                                                             and self.defrag is not None)}
        arrays: Dict[str, np.ndarray] = {}

        def put(prefix, obj):
            m, a = obj._artifact_state()
            arrays.update({f"{prefix}.{k}": v for k, v in a.items()})
            return {"class": type(obj).__name__, "params": obj.get_params(deep=False),
                    "meta": m}

        for name, obj in self._stored_steps().items():
            meta["steps"][name] = put(name, obj)
        if self.selected_ is not None:
            arrays["selected"] = np.asarray(self.selected_, np.int64)
        if self.vocabulary is not None:
            vc = self.vocabulary
            cols = list(self.columns_ if self.columns_ is not None else vc.compressors)
            meta["vocabulary"] = {
                "columns": cols, "method": vc.method, "budget": int(vc.budget),
                "seconds": float(vc.seconds),
                "allocation": [int(vc.allocation[c]) for c in cols],
                "compressors": [put(f"vocabulary.{i}", vc.compressors[c])
                                for i, c in enumerate(cols)]}
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        obj = cls(spec=params.get("spec") or {}, split_id=meta.get("split_id"),
                  dataset_fingerprint=meta.get("dataset_fingerprint"))
        obj.split_settings = meta.get("split_settings")

        def take(prefix, entry):
            part = {k[len(prefix) + 1:]: v for k, v in arrays.items()
                    if k.startswith(prefix + ".")}
            return _step_class(entry["class"])._from_artifact_state(entry["params"],
                                                                     entry["meta"], part)

        for name, entry in meta["steps"].items():
            if name not in STEPS or name == "vocabulary":
                raise ValueError(f"unknown pipeline step {name!r}")
            setattr(obj, name, take(name, entry))
        if meta.get("defrag_in_classifier"):
            obj.defrag = obj.classifier.defrags_[0]
        if "selected" in arrays:
            obj.selected_ = np.asarray(arrays["selected"], np.int64)
        if "vocabulary" in meta:
            from featagg_core.vocab.compressor import ColumnCompression
            v = meta["vocabulary"]
            cols = list(v["columns"])
            comps = {c: take(f"vocabulary.{i}", e)
                     for i, (c, e) in enumerate(zip(cols, v["compressors"]))}
            obj.vocabulary = ColumnCompression(comps, dict(zip(cols, v["allocation"])),
                                               v["method"], int(v["budget"]),
                                               float(v["seconds"]))
            obj.columns_ = cols
        obj.n_features_in_ = meta.get("n_features_in_")
        obj.n_labels_ = meta.get("n_labels_")
        return obj


# ----------------------------------------------------------------------------- legacy
def as_pipeline(obj, info: Optional[dict] = None, *, column=None) -> Pipeline:
    """A :class:`Pipeline` around what :func:`featagg_core.load_artifact` /
    :func:`featagg_core.artifacts.store.load_bundle` returned.

    That is a Pipeline (returned as it is), a run (its pipeline), a single fitted estimator
    (Defrag, KTXMLC, OneVsAll, DefragKTXMLC, BMGUFS; a VocabularyCompressor with the table
    ``column`` it compresses) or a bundle written by the old ``train`` command
    (``{"defrag", "model", "refrag", "refrag_defrag"}`` with ``info["shortlist"]``).
    Wrapped objects have no ``split_id`` (their training rows are unknown).

    Parameters
    ----------
    obj : Pipeline, Run, fitted estimator or dict
        What was loaded.
    info : dict or None, default None
        The bundle's info (``shortlist``), for an old ``train`` bundle.
    column : str or int, optional
        The table column a lone VocabularyCompressor compresses.

    Returns
    -------
    Pipeline

    Raises
    ------
    ValueError
        For a bundle without ``model`` or an object that is not a pipeline on its own.
    """
    if isinstance(obj, Pipeline):
        return obj
    if hasattr(obj, "pipeline") and isinstance(getattr(obj, "pipeline"), Pipeline):
        return obj.pipeline
    if isinstance(obj, dict):
        if "model" not in obj:
            raise ValueError("the bundle holds no 'model' entry (not one written by train)")
        shortlist = int((info or {}).get("shortlist", 100))
        pipe = _wrap_classifier(obj["model"], obj.get("defrag"))
        if obj.get("refrag") is not None:
            pipe.reranker = obj["refrag"]
            pipe.spec["rerank"] = {"kind": "refrag", "shortlist": shortlist}
        return pipe
    name = type(obj).__name__
    if name in ("KTXMLC", "OneVsAll", "DefragKTXMLC"):
        return _wrap_classifier(obj, None)
    if name == "Defrag":
        pipe = Pipeline(spec={"defrag": obj.get_params(deep=False)}, defrag=obj)
        pipe.n_features_in_ = int(obj.n_features_in_)
        return pipe
    if name == "BMGUFS":
        d = int(min(64, max(1, obj.n_nonzero_)))
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            selected = obj.select(d)
        pipe = Pipeline(spec={"feature_selection": {"kind": "bmgufs", "d": d,
                                                    **obj.get_params(deep=False)}},
                        selector=obj)
        pipe.selected_ = selected
        pipe.n_features_in_ = int(obj.n_features_in_)
        return pipe
    if name == "VocabularyCompressor" and column is not None:
        from featagg_core.vocab.compressor import ColumnCompression
        cc = ColumnCompression({column: obj}, {column: int(obj.n_buckets_)}, obj.method,
                               int(obj.budget), float(getattr(obj, "fit_time_", 0.0)))
        pipe = Pipeline(spec={"vocabulary": {"method": obj.method, "budget": int(obj.budget),
                                             "columns": [column]}}, vocabulary=cc)
        pipe.columns_ = [column]
        return pipe
    raise ValueError(f"a {name} on its own is not a pipeline that can be evaluated "
                     "(REFRAG and FIAT need a classifier; a vocabulary compressor needs "
                     "its column)")


def _wrap_classifier(model, defrag) -> Pipeline:
    per_tree = type(model).__name__ == "DefragKTXMLC"
    spec: Dict[str, Any] = {"classifier": {"kind": "ova" if type(model).__name__ ==
                                           "OneVsAll" else "ktxmlc"}}
    if defrag is not None:
        spec["defrag"] = defrag.get_params(deep=False)
    pipe = Pipeline(spec=spec, classifier=model, defrag=defrag)
    if per_tree:
        pipe.defrag = model.defrags_[0]
        spec["defrag"] = {"d0": model.d0, "per_tree": bool(model.per_tree)}
        pipe.n_features_in_ = int(model.n_features_in_)
    else:
        pipe.n_features_in_ = int(defrag.n_features_in_ if defrag is not None
                                  else model.n_features_in_)
    pipe.n_labels_ = int(model.n_labels_)
    return pipe
