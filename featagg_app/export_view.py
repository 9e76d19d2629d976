"""What the Export page offers: artifacts of the session's fitted objects, CSV/JSON
exports for use outside featagg, and evaluating an imported artifact on a dataset.

Pure functions (no streamlit) so they can be unit tested.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from featagg_core.artifacts import ARTIFACT_CLASSES

#: the kind of dataset an imported artifact can be evaluated on
CLASS_KIND = {"Defrag": "multilabel", "KTXMLC": "multilabel", "OneVsAll": "multilabel",
              "DefragKTXMLC": "multilabel",
              "Fiat": "multilabel", "Refrag": "multilabel", "BlockModel": "graph",
              "BMGUFS": "graph", "VocabularyCompressor": "table"}

#: where the other pages look for a fitted object of each class (session.put/get keys)
CLASS_STORE_KEY = {"Defrag": "defrag", "KTXMLC": "ktxmlc", "OneVsAll": "ova",
                   "DefragKTXMLC": "defrag_ktxmlc", "Fiat": "fiat",
                   "Refrag": "refrag", "BlockModel": "block_model", "BMGUFS": "bmgufs",
                   "VocabularyCompressor": "vocab"}


def exportable(store: Dict[str, Any]) -> Dict[str, Any]:
    """The fitted objects of a session store that are featagg artifacts (by store key)."""
    out = {}
    for key, obj in store.items():
        name = type(obj).__name__
        if ARTIFACT_CLASSES.get(name) == type(obj).__module__ and hasattr(obj, "_artifact_state"):
            out[key] = obj
    return out


def describe(obj) -> str:
    """One line about a fitted object, for lists."""
    name = type(obj).__name__
    bits = []
    for attr, label in (("n_clusters_", "clusters"), ("n_labels_", "labels"),
                        ("n_features_in_", "features"), ("n_buckets_", "buckets")):
        val = getattr(obj, attr, None)
        if isinstance(val, (int, np.integer)):
            bits.append(f"{int(val)} {label}")
    return name + (f" ({', '.join(bits)})" if bits else "")


def plain_exports(key: str, obj, feature_names=None) -> List[Tuple[str, bytes, str]]:
    """(file name, bytes, mime) of the CSV/JSON files that describe ``obj`` outside featagg:
    cluster assignments (Defrag), feature weights/ranking (BMGUFS), blocks (BlockModel),
    value→bucket mappings (VocabularyCompressor)."""
    name = type(obj).__name__
    files = []
    if name == "Defrag":
        labels = np.asarray(obj.labels_)
        df = pd.DataFrame({"feature": np.arange(labels.size), "cluster": labels})
        if feature_names is not None and len(feature_names) == labels.size:
            df.insert(1, "feature_name", list(feature_names))
        files.append((f"{key}_clusters.csv", df.to_csv(index=False).encode(), "text/csv"))
    elif name == "BMGUFS":
        r = np.asarray(obj.scores_)
        order = np.argsort(-r, kind="stable")
        df = pd.DataFrame({"rank": np.arange(1, r.size + 1), "feature": order, "weight": r[order]})
        if feature_names is not None and len(feature_names) == r.size:
            df.insert(2, "feature_name", [feature_names[j] for j in order])
        files.append((f"{key}_feature_ranking.csv", df.to_csv(index=False).encode(), "text/csv"))
    elif name == "BlockModel":
        df = pd.DataFrame({"node": np.arange(len(obj.labels_)), "block": obj.labels_})
        files.append((f"{key}_blocks.csv", df.to_csv(index=False).encode(), "text/csv"))
    elif name == "VocabularyCompressor":
        files.append((f"{key}_mapping.csv", obj.to_csv().encode(), "text/csv"))
        files.append((f"{key}_mapping.json", obj.to_json().encode(), "application/json"))
    return files


def _ranking_metrics(Y_true, scores, inv_prop, ks=(1, 3, 5)) -> Dict[str, float]:
    from featagg_core.metrics import ranking_metrics
    flat = ranking_metrics(Y_true, scores, ks, inv_prop, metrics=("P", "nDCG", "PSP", "coverage"))
    return {key: 100 * v for key, v in flat.items()}


def evaluate(obj, data, column: Optional[str] = None) -> Dict[str, Any]:
    """Evaluate an (imported) fitted object on a dataset of the matching kind.

    Returns a dict of named numbers (percentages for ranking metrics). Raises ValueError
    with a clear message when the object does not fit the data (kind, feature or label
    counts, node count).
    """
    name = type(obj).__name__
    kind = CLASS_KIND.get(name)
    if kind is None:
        raise ValueError(f"{name} artifacts cannot be evaluated here")
    if data.kind != kind:
        raise ValueError(f"a {name} needs a {kind} dataset; the current one is a {data.kind} "
                         "dataset — pick another in the sidebar")
    if kind == "multilabel":
        return _evaluate_multilabel(obj, data)
    if kind == "graph":
        return _evaluate_graph(obj, data)
    return _evaluate_table(obj, data, column)


def _check_features(obj, n_features: int, what: str) -> None:
    want = getattr(obj, "n_features_in_", None)
    if want is not None and int(want) != n_features:
        raise ValueError(f"this {type(obj).__name__} was fitted on {int(want)} features; "
                         f"the current {what} has {n_features}")


def _evaluate_multilabel(obj, data) -> Dict[str, Any]:
    from featagg_core.metrics import inverse_propensity
    name = type(obj).__name__
    X, Y = (data.X_test, data.Y_test) if data.X_test is not None else (data.X, data.Y)
    split = "test" if data.X_test is not None else "train"
    if name in ("KTXMLC", "OneVsAll", "DefragKTXMLC"):
        _check_features(obj, X.shape[1], "dataset")
        if int(obj.n_labels_) != Y.shape[1]:
            raise ValueError(f"this {name} predicts {int(obj.n_labels_)} labels; the current "
                             f"dataset has {Y.shape[1]}")
        scores = obj.predict_scores(X, k=5)
        return {"split": split, **_ranking_metrics(Y, scores, inverse_propensity(data.Y))}
    if name == "Defrag":
        from featagg_core.defrag import clustering_error, feature_representation
        labels = np.asarray(obj.labels_)
        if labels.size != data.X.shape[1]:
            raise ValueError(f"this Defrag clusters {labels.size} features; the current "
                             f"dataset has {data.X.shape[1]}")
        # the representation exactly as fit() built it (same sampling and pruning)
        R, _ = feature_representation(data.X, data.Y, obj.representation,
                                      float(obj.sample_points), float(obj.sample_labels),
                                      float(obj.prune_threshold))
        Xt = obj.transform(X)
        return {"split": split, "clusters": int(obj.n_clusters_),
                "clustering error": float(clustering_error(R, labels, int(obj.n_clusters_))),
                "features after": int(Xt.shape[1]), "non-zeros before": int(X.nnz),
                "non-zeros after": int(Xt.nnz)}
    if name == "Fiat":
        Xi = obj.transform(X)
        return {"split": split, "non-zeros before": int(X.nnz), "non-zeros after": int(Xi.nnz),
                "imputed per point": float((Xi.nnz - X.nnz) / max(X.shape[0], 1))}
    if name == "Refrag":
        return {"note": "REFRAG re-ranks a base classifier's scores: use it on the Rare "
                        "labels page together with a classifier."}
    raise ValueError(f"{name} artifacts cannot be evaluated on multi-label data")


def _evaluate_graph(obj, data) -> Dict[str, Any]:
    from featagg_core.metrics import normalized_mutual_info
    name = type(obj).__name__
    if name == "BlockModel":
        labels = np.asarray(obj.labels_)
        if labels.size != data.A.shape[0]:
            raise ValueError(f"this BlockModel partitions {labels.size} nodes; the current "
                             f"graph has {data.A.shape[0]}")
        out = {"blocks": int(labels.max() + 1) if labels.size else 0, "RRE": float(obj.rre_)}
        if data.y is not None:
            known = np.asarray(data.y) >= 0
            out["NMI(blocks, classes)"] = float(normalized_mutual_info(np.asarray(data.y)[known],
                                                                       labels[known]))
        return out
    if name == "BMGUFS":
        from featagg_core.graph_eval import evaluate_selection
        _check_features(obj, data.X.shape[1], "graph's node features")
        out = {"non-zero weights": int(np.count_nonzero(obj.scores_))}
        if data.y is None:
            return out
        for d in (16, 64):
            d_eff = min(d, out["non-zero weights"])
            if d_eff < 1:
                continue
            sel = np.argsort(-np.asarray(obj.scores_), kind="stable")[:d_eff]
            res = evaluate_selection(data.X, data.y, sel, n_seeds=5)
            out[f"ACC (d={d_eff})"] = 100 * float(res["acc_mean"])
            out[f"NMI (d={d_eff})"] = 100 * float(res["nmi_mean"])
        return out
    raise ValueError(f"{name} artifacts cannot be evaluated on a graph")


def _evaluate_table(obj, data, column: Optional[str]) -> Dict[str, Any]:
    from featagg_core.metrics import mutual_information
    if column is None or column not in data.table.columns:
        raise ValueError("choose the table column this vocabulary compressor applies to")
    values = data.table[column].to_numpy()
    buckets = obj.transform(values)
    labels = np.asarray(data.labels)
    i_x = float(mutual_information(pd.factorize(values)[0], labels))
    i_z = float(mutual_information(buckets, labels))
    return {"column": column, "I(X;C)": i_x, "I(Z;C)": i_z,
            "MI loss": (i_x - i_z) / i_x if i_x > 0 else 0.0,
            "unseen values": int((~pd.Index(values).isin(obj.vocabulary_)).sum())}


def manifest_summary(manifest: Dict[str, Any]) -> pd.DataFrame:
    """Key facts of an artifact manifest as a two-column table."""
    rows = [("class", manifest.get("class")), ("created", manifest.get("created")),
            ("format version", manifest.get("format_version")),
            ("dataset fingerprint", manifest.get("dataset_fingerprint"))]
    rows += [(f"param: {k}", json.dumps(v)) for k, v in manifest.get("params", {}).items()]
    rows += [(f"library: {k}", v) for k, v in manifest.get("library", {}).items()]
    rows += [(f"metric at save: {k}", v) for k, v in (manifest.get("metrics") or {}).items()]
    return pd.DataFrame(rows, columns=["field", "value"]).astype({"value": str})


def result_table(result: Dict[str, Any]) -> pd.DataFrame:
    """An evaluation result as a small two-column table (numbers rounded for reading)."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    return pd.DataFrame({"measure": list(result), "value": [fmt(v) for v in result.values()]}
                        ).set_index("measure")
