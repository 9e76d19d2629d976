"""Artifact checks of the composite and ranking states: Pipeline (every fitted step,
dimensions chained the way data flows), FeatureClusters and FeatureRanking.
"""
from __future__ import annotations

import math

from featagg_core.artifacts.checks.checker import INT32_MAX, StateChecker, short_repr

# ============================================================================ Pipeline
#: which classes may fill each step of a Pipeline (featagg_core.runs.pipeline.STEPS)
_PIPELINE_STEPS = {"imputer": ("Fiat",), "defrag": ("Defrag",),
                   "feature_clustering": ("FeatureClusters",),
                   "classifier": ("KTXMLC", "OneVsAll", "DefragKTXMLC"),
                   "reranker": ("Refrag",), "selector": ("BMGUFS", "FeatureRanking")}


def _json_ok(v, depth=0) -> bool:
    """A JSON document of plain values, at most 20 levels deep."""
    if depth > 20:
        return False
    if v is None or isinstance(v, (bool, str)):
        return True
    if isinstance(v, (int, float)):
        return not isinstance(v, float) or math.isfinite(v)
    if isinstance(v, list):
        return all(_json_ok(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _json_ok(x, depth + 1) for k, x in v.items())
    return False


def _pipeline(c: StateChecker) -> None:
    """Every fitted step of a run (featagg_core.runs.pipeline.Pipeline): each step checked as its
    own class with its arrays prefixed ``<step>.``, the dimensions chained the way data
    flows (imputer and DEFRAG take the raw features, the classifier DEFRAG's clusters
    unless it agglomerates itself, the re-ranker the raw features and the classifier's
    labels), selected columns inside the features, the vocabulary's compressors."""
    from featagg_core.vocab.compressor import METHODS
    spec = c.p_any("spec")
    if not isinstance(spec, dict) or not _json_ok(spec):
        c.fail(c._pname("spec"), "must be a JSON object of plain values")
    rerank = spec.get("rerank")
    if isinstance(rerank, dict) and "shortlist" in rerank:
        sl = rerank["shortlist"]
        if isinstance(sl, bool) or not isinstance(sl, int) or not 1 <= sl <= 1_000_000:
            c.fail(c._pname("spec"), f"rerank shortlist must be an integer in [1, 1000000], "
                                     f"got {short_repr(sl)}")
    for key in ("split_id", "dataset_fingerprint"):
        v = c.m_any(key, optional=True)
        if v is not None and (not isinstance(v, str) or len(v) > 200):
            c.fail(c._mname(key), "must be a short string or null")
    st = c.m_any("split_settings", optional=True)
    if st is not None:
        ok = isinstance(st, dict) and set(st) <= {"how", "test_size", "valid_size",
                                                  "random_state"}
        ok = ok and st.get("how") in (None, "dataset", "random")
        for k in ("test_size", "valid_size"):
            v = st.get(k) if ok else None
            ok = ok and (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and 0 <= v < 1))
        rs = st.get("random_state") if ok else None
        ok = ok and (rs is None or (isinstance(rs, int) and not isinstance(rs, bool)
                                    and 0 <= rs < 2**63))
        if not ok:
            c.fail(c._mname("split_settings"), "must give how, test_size, valid_size and "
                                               "random_state of a split")
    d = c.m_int("n_features_in_", 0, INT32_MAX, none=True, optional=True)
    L = c.m_int("n_labels_", 1, INT32_MAX, none=True, optional=True)
    in_clf = c.m_choice("defrag_in_classifier", (True, False)) \
        if "defrag_in_classifier" in c.meta else False
    steps = c.m_any("steps")
    if not isinstance(steps, dict):
        c.fail(c._mname("steps"), "must map step names to their state")
    subs = {}
    for name, entry in steps.items():
        if name not in _PIPELINE_STEPS:
            c.fail(c._mname("steps"), f"unknown step {str(name)[:40]!r}")
        if not isinstance(entry, dict) or set(entry) != {"class", "params", "meta"}:
            c.fail(c._mname("steps"), f"step {name!r} is not a step description")
        cls = entry["class"]
        if cls not in _PIPELINE_STEPS[name]:
            c.fail(c._mname("steps"), f"step {name!r} cannot be a {str(cls)[:40]!r} (one of "
                                      f"{', '.join(_PIPELINE_STEPS[name])})")
        subs[name] = c.sub(cls, entry["params"], entry["meta"], f"{name}.",
                           f"Pipeline step {name} ({cls})")

    def dim(name, key):
        return subs[name].meta.get(key) if name in subs else None

    def need(name, key, want, what):
        got = dim(name, key)
        if name in subs and want is not None and got is not None and got != want:
            c.fail(c._mname("steps"), f"step {name} takes {got} {what}, expected {want}")

    per_tree = "classifier" in subs and steps["classifier"]["class"] == "DefragKTXMLC"
    if in_clf and (not per_tree or "defrag" in subs):
        c.fail(c._mname("defrag_in_classifier"), "is set but the classifier does not hold "
                                                 "the DEFRAG step")
    need("imputer", "n_features", d, "features")
    need("defrag", "n_features_in_", d, "features")
    need("feature_clustering", "n_features_in_", d, "features")
    need("selector", "n_features_in_", d, "features")
    need("reranker", "n_features", d, "features")
    if "classifier" in subs:
        if "defrag" in subs and not per_tree:
            need("classifier", "n_features_in_", dim("defrag", "n_clusters_"), "features")
        else:
            need("classifier", "n_features_in_", d, "features")
        need("classifier", "n_labels_", L, "labels")
        need("reranker", "n_labels", dim("classifier", "n_labels_"), "labels")
    # a FeatureRanking selector has no n_features_in_: its scores (one per feature) say it
    n_sel = dim("selector", "n_features_in_")
    if "selector" in subs and steps["selector"]["class"] == "FeatureRanking":
        n_sel = int(subs["selector"].arrays[subs["selector"].prefix + "scores_"].shape[0])
        if d is not None and n_sel != d:
            c.fail(c._mname("steps"), f"step selector ranks {n_sel} features, expected {d}")
    if c.has("selected"):
        n_cols = d if d is not None else n_sel
        if n_cols is None:
            c.fail(c.aname("selected"), "selects columns but the pipeline declares no "
                                        "number of features (meta n_features_in_)")
        c.arr("selected", "i", (None,), lo=0, hi=n_cols - 1,
              rule=f"columns of the pipeline's {n_cols} features")
    voc = c.m_any("vocabulary", optional=True)
    if voc is not None:
        ok = isinstance(voc, dict) and set(voc) == {"columns", "method", "budget", "seconds",
                                                    "allocation", "compressors"}
        cols = voc.get("columns") if ok else None
        ok = ok and isinstance(cols, list) and all(isinstance(x, str) for x in cols) \
            and len(set(cols)) == len(cols)
        ok = ok and voc["method"] in METHODS and isinstance(voc["budget"], int) \
            and not isinstance(voc["budget"], bool) and voc["budget"] >= 1
        ok = ok and isinstance(voc["seconds"], (int, float)) and math.isfinite(voc["seconds"])
        ok = ok and isinstance(voc["allocation"], list) and len(voc["allocation"]) == len(cols) \
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                    for x in voc["allocation"])
        ok = ok and isinstance(voc["compressors"], list) and len(voc["compressors"]) == len(cols)
        if not ok:
            c.fail(c._mname("vocabulary"), "must give columns, method, budget, seconds, "
                                           "allocation and one compressor per column")
        for i, entry in enumerate(voc["compressors"]):
            if not isinstance(entry, dict) or set(entry) != {"class", "params", "meta"} \
                    or entry["class"] != "VocabularyCompressor":
                c.fail(c._mname("vocabulary"), f"compressor {i} is not a "
                                               "VocabularyCompressor description")
            c.sub("VocabularyCompressor", entry["params"], entry["meta"], f"vocabulary.{i}.",
                  f"Pipeline vocabulary compressor {i} ({cols[i]!r})")


def _feature_clusters(c: StateChecker) -> None:
    c.p_choice("kind", ("kmeans", "random_balanced", "ward"))
    c.p_int("n_clusters", 1)
    c.p_choice("representation", ("XY", "X"))
    c.p_int("max_features", 1, none=True)
    c.p_int("random_state", 0, 2**63 - 1, none=True)
    d = c.m_int("n_features_in_", 1)
    c.arr("labels_", "i", (d,), lo=0, hi=d - 1, rule=f"cluster ids of {d} features")


def _feature_ranking(c: StateChecker) -> None:
    c.p_choice("kind", ("bmgufs", "laplacian", "spec", "ndfs", "variance", "random", "all"))
    params = c.p_any("params")
    if params is not None and (not isinstance(params, dict) or not _json_ok(params)):
        c.fail(c._pname("params"), "must be null or a JSON object of plain values")
    c.m_choice("larger_is_better_", (True, False))
    scores = c.arr("scores_", "f", (None,), finite=False)
    c.permutation("order_", int(scores.shape[0]))


#: class name -> check of its state
CHECKS = {"Pipeline": _pipeline, "FeatureClusters": _feature_clusters,
          "FeatureRanking": _feature_ranking}
