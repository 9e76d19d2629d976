"""Run specs: validation, defaults, canonical form and names (part of
:mod:`featagg_core.experiment`; the format is fixed in docs/RUN_MODEL.md).

A spec is a plain JSON-able dict with one of these shapes::

    {"classifier": {...}, "defrag": {...}?, "rerank": {...}?, "impute": {...}?}  # classifier
    {"defrag": {...}}                                                           # agglomeration
    {"feature_clustering": {...}}      {"feature_selection": {...}}      {"vocabulary": {...}}

Every step's keys are its estimator's parameters (omitted ones take the estimator's
defaults) plus a few of the pipeline's own: ``defrag.per_tree`` (the DEFRAG paper's
ensemble: one agglomeration per tree, :class:`featagg_core.xmlc.ktxmlc.DefragKTXMLC`),
``classifier.kind``, ``rerank.kind`` / ``rerank.shortlist`` (how many of the classifier's
labels REFRAG re-scores; Refrag's ``shortlist_size``), ``impute.kind``, and for REFRAG and
FIAT an optional ``defrag`` sub-spec (their own feature clustering when the pipeline has no
``defrag`` step or they should not use it). ``n_jobs`` is not part of a spec: results do
not depend on it. Unknown keys and values of the wrong type raise ``ValueError`` naming the
key (``"classifier.n_clusters: ..."``) before anything is fitted.
"""
from __future__ import annotations

import json
import math
import numbers
from typing import Any, Dict, Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

__all__ = ["canonical_spec", "spec_kind", "run_name", "fitted_run_name", "fit_choices",
           "check_spec_fits", "STEP_ORDER",
           "KINDS", "FEATURE_SELECTION_KINDS", "FEATURE_CLUSTERING_KINDS"]

#: top-level spec keys, in canonical order
STEP_ORDER = ("defrag", "classifier", "rerank", "impute", "feature_clustering",
              "feature_selection", "vocabulary")
#: run kinds
KINDS = ("classifier", "agglomeration", "feature_clustering", "feature_selection",
         "vocabulary")
FEATURE_CLUSTERING_KINDS = ("kmeans", "random_balanced", "ward")
FEATURE_SELECTION_KINDS = ("bmgufs", "laplacian", "spec", "ndfs", "variance", "random", "all")
VOCABULARY_ALLOCATIONS = ("per_column", "greedy", "uniform", "mi")
_DATA_KIND = {"classifier": "multilabel", "agglomeration": "multilabel",
              "feature_clustering": "multilabel", "feature_selection": "graph",
              "vocabulary": "table"}
_NO_SPEC = ("n_jobs",)


# ----------------------------------------------------------------------------- defaults
def _params(cls, drop=()) -> Dict[str, Any]:
    return {k: v for k, v in cls().get_params(deep=False).items()
            if k not in _NO_SPEC and k not in drop}


def _defrag_defaults(top_level: bool) -> Dict[str, Any]:
    from featagg_core.agglomeration.defrag import Defrag
    out = _params(Defrag)
    if top_level:
        out["per_tree"] = False
    return out


def _classifier_defaults(kind: str) -> Dict[str, Any]:
    from featagg_core.xmlc.ktxmlc import KTXMLC, OneVsAll
    return _params(KTXMLC if kind == "ktxmlc" else OneVsAll)


def _rerank_defaults() -> Dict[str, Any]:
    from featagg_core.agglomeration.refrag import Refrag
    out = _params(Refrag)
    out["shortlist"] = out.pop("shortlist_size")
    if out.get("alpha") == "auto":
        # the run model tunes REFRAG through its own "tune" flag (runs/refrag_tuning, the
        # rule Refrag(alpha="auto") uses); an untuned run keeps Refrag's fixed fallback, a
        # number, so that a spec's alpha stays a number
        from featagg_core.agglomeration.refrag import FALLBACK
        out["alpha"] = FALLBACK[0]
    # tune: alpha, gamma and propensity_exponent picked on validation rows so that P@5
    # drops at most tune_max_drop (featagg_core.runs.refrag_tuning)
    out["tune"] = False
    out["tune_max_drop"] = 0.005
    return out


def _impute_defaults() -> Dict[str, Any]:
    from featagg_core.agglomeration.fiat import Fiat
    return _params(Fiat, drop=("defrag",))


_FEATURE_CLUSTERING = {
    "kmeans": {"n_clusters": None, "representation": "XY", "max_features": None,
               "random_state": 0},
    "random_balanced": {"n_clusters": None, "representation": "XY", "random_state": 0},
    "ward": {"n_clusters": None, "representation": "XY", "max_features": None,
             "random_state": 0},
}

_SELECTION = {
    "laplacian": {"d": 64, "affinity": "graph", "n_neighbors": 5},
    "spec": {"d": 64, "affinity": "knn", "n_neighbors": 5, "style": None},
    "ndfs": {"d": 64, "affinity": "graph", "n_neighbors": 5, "n_clusters": None,
             "alpha": 1.0, "beta": 1.0, "gamma": 1e8, "n_iter": 30, "random_state": 0},
    "variance": {"d": 64},
    "random": {"d": 64, "random_state": 0},
    "all": {"d": None},
}


def _selection_defaults(kind: str) -> Dict[str, Any]:
    if kind == "bmgufs":
        from featagg_core.graph.bmgufs import BMGUFS
        # keep_d: lower gamma down the paper's grid until nnz(r) >= d (BMGUFS.fit_gamma_grid)
        return {"d": 64, "keep_d": True, **_params(BMGUFS)}
    return dict(_SELECTION[kind])


def _vocabulary_defaults() -> Dict[str, Any]:
    from featagg_core.vocab.compressor import VocabularyCompressor
    return {**_params(VocabularyCompressor), "columns": None, "allocation": "per_column"}


# ----------------------------------------------------------------------------- values
def _err(path: str, text: str) -> ValueError:
    return ValueError(f"{path}: {text}")


def _json_scalar(path: str, value):
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise _err(path, f"must be a finite number, got {value!r}")
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_json_scalar(f"{path}[{i}]", v) for i, v in enumerate(value)]
    raise _err(path, f"must be a number, a string, true/false, null or a list, got "
                     f"{type(value).__name__}")


def _coerce(path: str, value, default):
    """``value`` converted to the type of ``default`` (bool / int / float / str), or any
    JSON value when the default is None."""
    if isinstance(default, bool):
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise _err(path, f"must be true or false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise _err(path, f"must be an integer, got {value!r}")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
                or not math.isfinite(float(value)):
            raise _err(path, f"must be a finite number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise _err(path, f"must be a string, got {value!r}")
        return value
    return _json_scalar(path, value)


def _fill(path: str, given: dict, defaults: dict, extra=()) -> dict:
    if not isinstance(given, dict):
        raise _err(path, f"must be a dict of parameters, got {type(given).__name__}")
    allowed = set(defaults) | set(extra)
    unknown = sorted(set(map(str, given)) - allowed)
    if unknown:
        raise _err(f"{path}.{unknown[0]}",
                   f"unknown key; {path} takes {', '.join(sorted(allowed))}")
    out = {}
    for key in sorted(defaults):
        out[key] = _coerce(f"{path}.{key}", given[key], defaults[key]) if key in given \
            else defaults[key]
    return out


def _int_at_least(path, value, low, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise _err(path, f"must be an integer >= {low}, got {value!r}")


def _positive(path, value, strict=True):
    if not (value > 0 if strict else value >= 0):
        raise _err(path, f"must be {'> 0' if strict else '>= 0'}, got {value!r}")


def _choice(path, value, options):
    if value not in options:
        raise _err(path, f"must be one of {', '.join(map(repr, options))}, got {value!r}")


def _run_validator(path: str, obj, method: str):
    """Call an estimator's own parameter check (it names the parameter) before fitting."""
    check = getattr(obj, method, None)
    if check is None:
        return
    try:
        check()
    except ValueError as exc:
        raise _err(path, str(exc)) from None


def _kind_and_params(path: str, given, default: str, kinds, drop=()):
    """The step's ``kind`` (checked against ``kinds``) and its other keys (minus ``drop``)."""
    if not isinstance(given, dict):
        raise _err(path, f"must be a dict of parameters, got {type(given).__name__}")
    kind = given.get("kind", default)
    _choice(f"{path}.kind", kind, kinds)
    return kind, {k: v for k, v in given.items() if k != "kind" and k not in drop}


# ----------------------------------------------------------------------------- steps
def _defrag(path: str, given: dict, top_level: bool) -> dict:
    out = _fill(path, given, _defrag_defaults(top_level))
    from featagg_core.agglomeration.defrag import Defrag
    _run_validator(path, Defrag(**{k: v for k, v in out.items() if k != "per_tree"}),
                   "_check_params")
    return out


def _classifier(path: str, given: dict) -> dict:
    kind, params = _kind_and_params(path, given, "ktxmlc", ("ktxmlc", "ova"))
    out = {"kind": kind, **_fill(path, params, _classifier_defaults(kind))}
    _int_at_least(f"{path}.random_state", out["random_state"], 0)
    _positive(f"{path}.C", out["C"])
    _positive(f"{path}.eps", out["eps"])
    _int_at_least(f"{path}.max_iter", out["max_iter"], 1)
    _positive(f"{path}.weight_threshold", out["weight_threshold"], strict=False)
    _positive(f"{path}.bias", out["bias"], strict=False)
    if kind == "ktxmlc":
        _int_at_least(f"{path}.n_clusters", out["n_clusters"], 2)
        for key in ("n_trees", "max_depth", "max_leaf_labels", "beam_width",
                    "min_cluster_size", "kmeans_max_iter"):
            _int_at_least(f"{path}.{key}", out[key], 1)
        _int_at_least(f"{path}.kmeans_rounds", out["kmeans_rounds"], 1, allow_none=True)
        _positive(f"{path}.kmeans_oversampling", out["kmeans_oversampling"])
        _positive(f"{path}.kmeans_tol", out["kmeans_tol"], strict=False)
        _positive(f"{path}.joint_weight", out["joint_weight"], strict=False)
        _choice(f"{path}.representation", out["representation"], ("input", "joint"))
        _choice(f"{path}.balanced", out["balanced"], (None, True, False))
        _choice(f"{path}.one_vs_all", out["one_vs_all"], ("auto", "never"))
    return out


def _clustering_source(path: str, given: dict, pipeline_has_defrag: bool, out: dict):
    """REFRAG / FIAT: their own ``defrag`` sub-spec, or none (= the pipeline's step)."""
    if "defrag" in given:
        out["defrag"] = _defrag(f"{path}.defrag", given["defrag"], top_level=False)
    elif not pipeline_has_defrag:
        out["defrag"] = _defrag(f"{path}.defrag", {}, top_level=False)


def _rerank(path: str, given: dict, has_defrag: bool) -> dict:
    _, params = _kind_and_params(path, given, "refrag", ("refrag",), drop=("defrag",))
    out = {"kind": "refrag", **_fill(path, params, _rerank_defaults())}
    from featagg_core.agglomeration.refrag import Refrag
    kw = {k: v for k, v in out.items()
          if k not in ("kind", "shortlist", "tune", "tune_max_drop")}
    _run_validator(path, Refrag(shortlist_size=out["shortlist"], **kw), "_check_params")
    if not 0.0 <= out["tune_max_drop"] < 1.0:
        raise _err(f"{path}.tune_max_drop", f"must be a fraction in [0, 1) (0.005 = half a "
                                            f"point of P@5), got {out['tune_max_drop']!r}")
    _clustering_source(path, given, has_defrag, out)
    return out


def _impute(path: str, given: dict, has_defrag: bool) -> dict:
    _, params = _kind_and_params(path, given, "fiat", ("fiat",), drop=("defrag",))
    out = {"kind": "fiat", **_fill(path, params, _impute_defaults())}
    from featagg_core.agglomeration.fiat import Fiat
    _run_validator(path, Fiat(**{k: v for k, v in out.items() if k != "kind"}),
                   "_check_params")
    _clustering_source(path, given, has_defrag, out)
    return out


def _feature_clustering(path: str, given: dict) -> dict:
    kind, params = _kind_and_params(path, given, "kmeans", FEATURE_CLUSTERING_KINDS)
    defaults = dict(_FEATURE_CLUSTERING[kind], n_clusters=0)
    if "n_clusters" not in params:
        raise _err(f"{path}.n_clusters", "is required (the number of feature clusters)")
    out = {"kind": kind, **_fill(path, params, defaults)}
    _int_at_least(f"{path}.n_clusters", out["n_clusters"], 1)
    _choice(f"{path}.representation", out["representation"], ("XY", "X"))
    if "max_features" in out:
        _int_at_least(f"{path}.max_features", out["max_features"], 1, allow_none=True)
    if "random_state" in out:
        _int_at_least(f"{path}.random_state", out["random_state"], 0)
    return out


def _feature_selection(path: str, given: dict) -> dict:
    kind, params = _kind_and_params(path, given, "bmgufs", FEATURE_SELECTION_KINDS)
    defaults = _selection_defaults(kind)
    if kind == "all":
        params.pop("d", None)
    out = {"kind": kind, **_fill(path, params, defaults)}
    if kind != "all":
        _int_at_least(f"{path}.d", out["d"], 1)
    if kind == "bmgufs":
        from featagg_core.graph.bmgufs import BMGUFS
        _int_at_least(f"{path}.n_blocks", out["n_blocks"], 1, allow_none=True)
        _int_at_least(f"{path}.candidate", out["candidate"], 0, allow_none=True)
        _choice(f"{path}.block_init", out["block_init"], ("spectral", "random"))
        _run_validator(path, BMGUFS(**{k: v for k, v in out.items()
                                       if k not in ("kind", "d", "keep_d")}),
                       "_validate_params")
    if "affinity" in out:
        _choice(f"{path}.affinity", out["affinity"], ("graph", "knn"))
        _int_at_least(f"{path}.n_neighbors", out["n_neighbors"], 1)
    if kind == "spec" and out["style"] is not None:
        s = out["style"]
        if isinstance(s, bool) or not isinstance(s, int) or s == 1 or s < -1:
            raise _err(f"{path}.style", f"must be -1, 0, an integer >= 2 or null, got {s!r}")
    if kind == "ndfs":
        _int_at_least(f"{path}.n_clusters", out["n_clusters"], 1, allow_none=True)
        _int_at_least(f"{path}.n_iter", out["n_iter"], 1)
        for key in ("alpha", "beta", "gamma"):
            _positive(f"{path}.{key}", out[key])
    if "random_state" in out:
        _int_at_least(f"{path}.random_state", out["random_state"], 0, allow_none=True)
    return out


def _vocabulary(path: str, given: dict) -> dict:
    out = _fill(path, given, _vocabulary_defaults())
    _choice(f"{path}.allocation", out["allocation"], VOCABULARY_ALLOCATIONS)
    cols = out["columns"]
    if cols is not None:
        if not isinstance(cols, list) or not cols or \
                not all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in cols):
            raise _err(f"{path}.columns", f"must be null (every column) or a non-empty list "
                                          f"of column names, got {cols!r}")
        if len(set(cols)) != len(cols):
            raise _err(f"{path}.columns", "lists a column twice")
    if out["allocation"] == "greedy" and out["method"] not in ("submodular", "threshold"):
        raise _err(f"{path}.allocation", f"'greedy' needs method 'submodular' or "
                                         f"'threshold', not {out['method']!r}")
    from featagg_core.vocab.compressor import VocabularyCompressor
    _run_validator(path, VocabularyCompressor(**{k: v for k, v in out.items()
                                                 if k not in ("columns", "allocation")}),
                   "_validate")
    return out


# ----------------------------------------------------------------------------- public
def spec_kind(spec: dict) -> str:
    """The run kind of a (canonical or raw) spec.

    Parameters
    ----------
    spec : dict
        A spec.

    Returns
    -------
    str
        "classifier", "agglomeration", "feature_clustering", "feature_selection" or
        "vocabulary".

    Raises
    ------
    ValueError
        For a spec that is not a non-empty dict of known steps.
    """
    if not isinstance(spec, dict) or not spec:
        raise ValueError("spec must be a non-empty dict, e.g. {'classifier': {'kind': "
                         "'ktxmlc'}}")
    unknown = [k for k in spec if k not in STEP_ORDER]
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown spec key; a spec has "
                         f"{', '.join(STEP_ORDER)}")
    keys = set(spec)
    for alone in ("feature_clustering", "feature_selection", "vocabulary"):
        if alone in keys:
            if len(keys) > 1:
                other = sorted(keys - {alone})[0]
                raise ValueError(f"{other}: cannot be combined with {alone} in one spec")
            return alone
    if "classifier" in keys:
        return "classifier"
    for needs in ("rerank", "impute"):
        if needs in keys:
            raise ValueError(f"{needs}: needs a classifier step to work on")
    return "agglomeration"


def canonical_spec(spec: dict) -> dict:
    """``spec`` with every default filled in and its keys ordered.

    Two specs that mean the same pipeline compare (and hash) equal.

    Parameters
    ----------
    spec : dict
        A run spec (docs/RUN_MODEL.md).

    Returns
    -------
    dict
        The canonical spec (a new dict).

    Raises
    ------
    ValueError
        Naming the key, for unknown keys, wrong types and out-of-range values.
    """
    kind = spec_kind(spec)
    out: Dict[str, Any] = {}
    if kind == "classifier":
        has_defrag = "defrag" in spec
        if has_defrag:
            out["defrag"] = _defrag("defrag", spec["defrag"], top_level=True)
        out["classifier"] = _classifier("classifier", spec["classifier"])
        if "rerank" in spec:
            out["rerank"] = _rerank("rerank", spec["rerank"], has_defrag)
        if "impute" in spec:
            out["impute"] = _impute("impute", spec["impute"], has_defrag)
        if has_defrag and out["defrag"]["per_tree"]:
            _check_per_tree(out)
    elif kind == "agglomeration":
        out["defrag"] = _defrag("defrag", spec["defrag"], top_level=True)
        if out["defrag"]["per_tree"]:
            raise _err("defrag.per_tree", "the per-tree ensemble needs a classifier step "
                                          "(one agglomeration per KTXMLC tree)")
    elif kind == "feature_clustering":
        out["feature_clustering"] = _feature_clustering("feature_clustering",
                                                        spec["feature_clustering"])
    elif kind == "feature_selection":
        out["feature_selection"] = _feature_selection("feature_selection",
                                                      spec["feature_selection"])
    else:
        out["vocabulary"] = _vocabulary("vocabulary", spec["vocabulary"])
    return out


def _check_per_tree(spec: dict) -> None:
    """The per-tree ensemble (DefragKTXMLC) takes only some of the steps' parameters."""
    d, c = spec["defrag"], spec["classifier"]
    if c["kind"] != "ktxmlc":
        raise _err("defrag.per_tree", "the per-tree ensemble needs classifier.kind 'ktxmlc'")
    d_default, c_default = _defrag_defaults(True), _classifier_defaults("ktxmlc")
    for key in d:
        if key not in ("d0", "representation", "per_tree", "random_state") \
                and d[key] != d_default[key]:
            raise _err(f"defrag.{key}", "cannot be changed with per_tree (the ensemble "
                                        "takes d0, representation and random_state)")
    for key in c:
        if key not in ("kind", "n_clusters", "n_trees", "max_depth", "max_leaf_labels", "C",
                       "beam_width", "random_state") and c[key] != c_default[key]:
            raise _err(f"classifier.{key}", "cannot be changed with defrag.per_tree")
    if d["random_state"] != c["random_state"]:
        raise _err("defrag.random_state", "must equal classifier.random_state with per_tree "
                                          "(member t uses seed random_state + t for both)")


@fill_doc
def spec_json(spec: dict) -> str:
    """Canonical JSON text of a canonical spec (keys sorted, no spaces).

    {canonical_spec_params}

    Returns
    -------
    str
        The JSON text.
    """
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


@fill_doc
def check_spec_fits(spec: dict, data) -> None:
    """ValueError when a canonical spec does not fit the dataset.

    Its kind, columns, feature counts, classes.

    Parameters
    ----------
    {canonical_spec}
    {data_any}

    Raises
    ------
    ValueError
        Saying what does not fit.
    """
    kind = spec_kind(spec)
    want = _DATA_KIND[kind]
    if data.kind != want:
        raise ValueError(f"{next(iter(spec))}: a {kind.replace('_', ' ')} run needs a {want} "
                         f"dataset; this one is a {data.kind} dataset")
    if kind == "feature_clustering":
        fc = spec["feature_clustering"]
        d = data.X.shape[1]
        if fc["n_clusters"] > d:
            raise _err("feature_clustering.n_clusters",
                       f"{fc['n_clusters']} clusters for {d} features")
    if kind == "feature_selection":
        fs = spec["feature_selection"]
        X = getattr(data, "X", None)
        if X is None or X.shape[1] == 0:
            raise _err("feature_selection", "the graph has no node features to select from")
        n_classes = _n_classes(data)
        # BMGUFS without n_blocks and without classes picks k by the eigengap rule
        if fs["kind"] == "ndfs" and fs["n_clusters"] is None and n_classes < 1:
            raise _err("feature_selection.n_clusters", "is None and the graph's nodes have "
                                                       "no classes; give n_clusters")
    if kind == "vocabulary":
        cols = spec["vocabulary"]["columns"]
        if cols is not None:
            missing = [c for c in cols if c not in data.table.columns]
            if missing:
                raise _err("vocabulary.columns",
                           f"no column {missing[0]!r}; the table has "
                           f"{', '.join(map(str, data.table.columns))}")
        elif len(data.table.columns) == 0:
            raise _err("vocabulary.columns", "the table has no columns to compress")


def _n_classes(data) -> int:
    if data.y is None:
        return 0
    from featagg_core.graph.evaluation import known_class_mask
    y = np.asarray(data.y)
    return int(np.unique(y[known_class_mask(y)]).size)


# ----------------------------------------------------------------------------- names
def _g(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _seed(params: dict) -> str:
    rs = params.get("random_state")
    return f" seed={rs}" if rs not in (None, 0) else ""


#: how a setting that differs from its default is written in a run name (parameter ->
#: short name); the seed is written " seed=N" by _seed, the headline settings are not
#: repeated; a parameter not listed here is written by its own name
_SHORT = {"max_depth": "depth", "max_leaf_labels": "leaf", "beam_width": "beam",
          "kmeans_max_iter": "k-means passes", "max_iter": "iterations", "sample_points": "points",
          "sample_labels": "labels", "propensity_exponent": "β", "gamma": "γ",
          "n_prototype_candidates": "prototypes", "normalization": "C^F norm",
          "n_candidates": "candidates", "learning_rate": "η", "block_init": "restarts",
          "min_count": "min count", "epsilon": "ε", "n_neighbors": "neighbours",
          "tune_max_drop": "max P@5 drop", "n_iter_block": "block iterations"}
#: settings written as a word rather than name=value (parameter -> {value: word})
_WORDS = {"one_vs_all": {"never": "trees always"}, "form": {"trees": "trees always",
                                                             "flat": "one flat tree"},
          "keep_d": {False: "γ as given"},
          "balanced": {True: "balanced", False: "unbalanced"}, "refine": {False: "no refine"},
          "normalize": {False: "rows not normalised"}}


def _value(v) -> str:
    if isinstance(v, list):
        return f"[{len(v)}]" if len(v) > 3 else "[" + ",".join(_value(x) for x in v) + "]"
    return _g(v)


def _changed(params: dict, defaults: dict, shown=()) -> str:
    """" depth=4 leaf=10 beam=5": every setting of ``params`` other than the ``shown`` ones
    (and the seed, written by :func:`_seed`) that differs from ``defaults``, in their
    order."""
    out = []
    for key, value in params.items():
        if key in shown or key in ("kind", "random_state", "defrag") or key not in defaults:
            continue
        default = defaults[key]
        if value == default and type(value) is type(default):
            continue
        if isinstance(value, float) and isinstance(default, (int, float)) \
                and not isinstance(default, bool) and float(default) == value:
            continue
        word = _WORDS.get(key, {}).get(value) if not isinstance(value, list) else None
        if word is not None:
            out.append(word)
        elif key == "candidate":
            out.append(f"block model #{value}")
        else:
            out.append(f"{_SHORT.get(key, key)}={_value(value)}")
    return "".join(" " + part for part in out)


def _defrag_name(d: dict, standalone: bool) -> str:
    rep = d["representation"]
    if standalone:
        head = f"DEFRAG-{rep} d0={d['d0']}"
    else:
        head = "DEFRAG" + ("" if rep == "XY" else f"-{rep}") + f" d0={d['d0']}"
    if d.get("per_tree"):
        head += " per tree"
    return head + _changed(d, _defrag_defaults(True), ("d0", "representation", "per_tree")) \
        + _seed(d)


def _own_clustering(step: dict) -> str:
    """" on DEFRAG d0=16": REFRAG's / FIAT's own feature clustering, when it is not the
    default one they fit without a DEFRAG step."""
    own = step.get("defrag")
    if own is None:
        return ""
    name = _defrag_name(own, standalone=False)
    default = _defrag_name(dict(_defrag_defaults(False), per_tree=False), standalone=False)
    return "" if name == default else " on " + name


_SELECTION_TITLES = {"laplacian": "Laplacian score", "spec": "SPEC", "ndfs": "NDFS",
                     "variance": "variance", "random": "random"}


@fill_doc
def run_name(spec: dict) -> str:
    """A short human name for a canonical spec: its headline settings and every setting
    that differs from its default.

    "KTXMLC K=2 T=3 · DEFRAG d0=8", "KTXMLC K=16 T=1 depth=4 leaf=10 beam=5", "One-vs-all
    C=1", "DEFRAG-XY d0=8", "k-means K=256 (XY)", "BMGUFS d=64 β̄=0.6 γ=2", "BMGUFS d=64
    β̄=0.6 γ=2 k=7", "Vocabulary submodular m=10", "… + REFRAG α=0.4". What the fit chose
    (one flat tree, the number of blocks) is added by :func:`fitted_run_name`.

    {canonical_spec_params}

    Returns
    -------
    str
        The name.
    """
    kind = spec_kind(spec)
    if kind == "classifier":
        c = spec["classifier"]
        if c["kind"] == "ktxmlc":
            name = f"KTXMLC K={c['n_clusters']} T={c['n_trees']}"
            shown = ("n_clusters", "n_trees")
        else:
            name = f"One-vs-all C={_g(c['C'])}"
            shown = ("C",)
        name += _changed(c, _classifier_defaults(c["kind"]), shown) + _seed(c)
        if "defrag" in spec:
            name += " · " + _defrag_name(spec["defrag"], standalone=False)
        if "rerank" in spec:
            r = spec["rerank"]
            name += (" + REFRAG tuned" if r.get("tune") else f" + REFRAG α={_g(r['alpha'])}")
            name += _changed(r, _rerank_defaults(), ("alpha", "tune")) + _seed(r) \
                + _own_clustering(r)
        if "impute" in spec:
            i = spec["impute"]
            name += f" + FIAT mix={_g(i['mix'])}" + _changed(i, _impute_defaults(), ("mix",)) \
                + _own_clustering(i)
        return name
    if kind == "agglomeration":
        return _defrag_name(spec["defrag"], standalone=True)
    if kind == "feature_clustering":
        fc = spec["feature_clustering"]
        rest = _changed(fc, _FEATURE_CLUSTERING[fc["kind"]],
                        ("n_clusters", "representation")) + _seed(fc)
        if fc["kind"] == "random_balanced":
            return f"random balanced K={fc['n_clusters']}" + rest
        title = "k-means" if fc["kind"] == "kmeans" else "Ward"
        return f"{title} K={fc['n_clusters']} ({fc['representation']})" + rest
    if kind == "feature_selection":
        fs = spec["feature_selection"]
        if fs["kind"] == "bmgufs":
            name = f"BMGUFS d={fs['d']} β̄={_g(fs['beta_bar'])} γ={_g(fs['gamma'])}"
            if fs["n_blocks"] is not None:
                name += f" k={fs['n_blocks']}"
            return name + _changed(fs, _selection_defaults("bmgufs"),
                                   ("d", "beta_bar", "gamma", "n_blocks")) + _seed(fs)
        if fs["kind"] == "all":
            return "all features"
        title = _SELECTION_TITLES[fs["kind"]]
        if "affinity" in fs:
            title += " (kNN)" if fs["affinity"] == "knn" else " (graph)"
        return f"{title} d={fs['d']}" + _changed(fs, _selection_defaults(fs["kind"]),
                                                 ("d", "affinity")) + _seed(fs)
    v = spec["vocabulary"]
    name = f"Vocabulary {v['method']} m={v['budget']}"
    if v["allocation"] != "per_column":
        name += f" ({v['allocation']} allocation)"
    if v["columns"] is not None:
        name += f" on {len(v['columns'])} column" + ("s" if len(v["columns"]) != 1 else "")
    return name + _changed(v, _vocabulary_defaults(),
                           ("method", "budget", "allocation", "columns")) + _seed(v)


def _is_flat(model) -> bool:
    """True when a fitted KTXMLC holds one flat tree: a root whose children are all labels
    (one-vs-all), which ``one_vs_all="auto"`` or a label set that fits one leaf gives."""
    trees = getattr(model, "trees_", None)
    n_labels = getattr(model, "n_labels_", None)
    if not isinstance(trees, (list, tuple)) or len(trees) != 1 or not n_labels:
        return False
    try:
        return int(trees[0]["n_children"][0]) == int(n_labels) and n_labels > 1
    except (KeyError, IndexError, TypeError, ValueError):
        return False


def _text(value) -> Optional[str]:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _classifier_choices(model, params: dict) -> list:
    """What a fitted classifier chose that its spec did not fix: the form it took (one
    flat tree rather than label trees: ``form_`` when the model says, else read off its
    trees), fewer trees than asked, and a C it picked (``C_``); its own summary
    (``choice_``) only when it is short and the model says nothing else."""
    members = getattr(model, "models_", None)       # the per-tree ensemble (DefragKTXMLC)
    if isinstance(members, (list, tuple)) and members and getattr(model, "defrags_", None):
        flat = sum(_is_flat(m) for m in members)
        if flat == len(members):
            return ["one flat tree per member"]
        return [f"{flat} of {len(members)} members flat"] if flat else []
    out = []
    form = _text(getattr(model, "form_", None))
    trees = getattr(model, "trees_", None)
    if params.get("kind") == "ktxmlc":
        if form == "flat" or (form is None and _is_flat(model)):
            if params.get("form") != "flat":       # not already in the spec's name
                out.append("one flat tree")
        elif form is not None and form != "trees":
            out.append(form)
        elif form == "trees" and params.get("form", "trees") != "trees":
            out.append("label trees")
        if form != "flat" and not _is_flat(model) and isinstance(trees, (list, tuple)) \
                and 0 < len(trees) < int(params.get("n_trees", 1)):
            out.append(f"{len(trees)} tree" + ("s" if len(trees) > 1 else ""))
    c_fit = getattr(model, "C_", None)
    if isinstance(c_fit, (int, float)) and not isinstance(c_fit, bool) \
            and (not isinstance(params.get("C"), (int, float))
                 or float(params["C"]) != float(c_fit)):
        out.append(f"C={_g(float(c_fit))}")
    choice = _text(getattr(model, "choice_", None))
    if not out and form is None and choice is not None and len(choice) <= 40:
        out.append(choice)
    return out


_K_SOURCES = {"classes": "from the classes", "eigengap": "by the eigengap rule",
              "modularity": "by the modularity knee", "given": "given",
              "block model": "from the given block model"}


def _selector_choices(model, params: dict) -> list:
    """BMGUFS: the number of blocks and where it came from (``k_source_`` when the model
    says, else its ``n_blocks_rule_`` sentence), and a γ lowered to keep d features."""
    if params.get("kind") != "bmgufs":
        return []
    out = []
    k = getattr(model, "n_blocks_", None)
    if isinstance(k, (int, np.integer)) and params.get("n_blocks") is None:
        source = _text(getattr(model, "k_source_", None))
        rule = _text(getattr(model, "n_blocks_rule_", None)) or ""
        if source is None:
            source = ("modularity" if "modularity" in rule else
                      "eigengap" if "eigengap" in rule else
                      "classes" if "class" in rule else
                      "block model" if "block model" in rule else None)
        where = _K_SOURCES.get(source, source) if source is not None else None
        out.append(f"k={int(k)}" + (f" {where}" if where else ""))
    gamma = getattr(model, "gamma_", None)
    if isinstance(gamma, (int, float)) and isinstance(params.get("gamma"), (int, float)) \
            and float(gamma) != float(params["gamma"]):
        out.append(f"γ lowered to {_g(float(gamma))}")
    return out


@fill_doc
def fit_choices(spec: dict, pipeline) -> list:
    """What the fit of a canonical spec chose that the spec left open: one flat tree instead
    of KTXMLC's label trees, the number of blocks BMGUFS took (from the node classes or the
    eigengap rule), a γ it lowered, a C picked on validation rows.

    Read defensively from the fitted steps (an older artifact's steps may lack them).

    Parameters
    ----------
    {canonical_spec}
    pipeline : Pipeline or None
        The fitted pipeline of that spec.

    Returns
    -------
    list of str
        Short phrases ("one flat tree", "k=7 from the classes"), empty when the fit chose
        nothing the spec did not say.
    """
    if pipeline is None:
        return []
    out = []
    clf = getattr(pipeline, "classifier", None)
    if clf is not None and "classifier" in spec:
        out += _classifier_choices(clf, spec["classifier"])
    sel = getattr(pipeline, "selector", None)
    if sel is not None and "feature_selection" in spec:
        out += _selector_choices(sel, spec["feature_selection"])
    return out


@fill_doc
def fitted_run_name(spec: dict, pipeline) -> str:
    """:func:`run_name` with what the fit chose (:func:`fit_choices`): "KTXMLC K=16 T=3 →
    one flat tree", "BMGUFS d=64 β̄=0.6 γ=2 → k=7 from the classes"; a classifier's choices
    stand right after it ("KTXMLC K=2 T=1 → one flat tree + REFRAG tuned").

    The same spec fitted on the same data and split gives the same name.

    Parameters
    ----------
    {canonical_spec}
    pipeline : Pipeline or None
        The fitted pipeline of that spec (None: the spec's name alone).

    Returns
    -------
    str
        The name.
    """
    name = run_name(spec)
    choices = fit_choices(spec, pipeline)
    if not choices:
        return name
    chosen = " → " + ", ".join(choices)
    if "classifier" in spec and ("rerank" in spec or "impute" in spec):
        # the classifier's choices right after the classifier: "KTXMLC K=2 T=1 → one flat
        # tree + REFRAG tuned"
        head = run_name({k: v for k, v in spec.items() if k in ("defrag", "classifier")})
        if name.startswith(head):
            return head + chosen + name[len(head):]
    return name + chosen


@fill_doc
def sub_spec(spec: dict, step: str) -> Optional[dict]:
    """The part of a canonical spec a fitted step depends on.

    ``base=`` reuses a step when this is equal: the classifier depends on the features it
    was trained on, REFRAG and FIAT on the clustering they use.

    Parameters
    ----------
    {canonical_spec}
    step : str
        The fitted step's name, as in the pipeline: "defrag", "classifier", "reranker",
        "imputer", "feature_clustering", "selector" or "vocabulary".

    Returns
    -------
    dict or None
        The sub-spec, None when the spec has no such step.
    """
    if step == "defrag":
        return {"defrag": spec["defrag"]} if "defrag" in spec else None
    if step == "classifier":
        if "classifier" not in spec:
            return None
        return {"defrag": spec.get("defrag"), "classifier": spec["classifier"]}
    if step in ("reranker", "imputer"):
        key = "rerank" if step == "reranker" else "impute"
        if key not in spec:
            return None
        own = spec[key].get("defrag")
        return {key: spec[key], "clustering": own if own is not None else spec.get("defrag")}
    key = {"feature_clustering": "feature_clustering", "selector": "feature_selection",
           "vocabulary": "vocabulary"}[step]
    return {key: spec[key]} if key in spec else None
