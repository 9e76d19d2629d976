"""What the Export page offers: the session's runs as pipeline artifacts (one per run, or a
bundle of all of them with the run table), CSV/JSON exports for use outside featagg, and
turning an imported artifact or bundle into pipelines the page evaluates with
``experiment.evaluate``.

Pure functions (no streamlit) so they can be unit tested. Nothing here scores anything.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from featagg_core.experiment import Pipeline, as_pipeline, canonical_spec
from featagg_core.runs.spec import fitted_run_name

#: step classes and what they are called in the page
STEP_TITLES = {"imputer": "FIAT", "defrag": "DEFRAG", "feature_clustering": "feature clustering",
               "classifier": "classifier", "reranker": "REFRAG", "selector": "feature selection",
               "vocabulary": "vocabulary"}


def entry_key(title: str) -> str:
    """A bundle entry name for a run title ("#3 KTXMLC K=2 T=3 · DEFRAG d0=8" →
    "run03_ktxmlc_k_2_t_3_defrag_d0_8"): letters, digits and '_' only, at most 100."""
    m = re.match(r"#(\d+)\s*(.*)", title)
    num, rest = (int(m.group(1)), m.group(2)) if m else (0, title)
    slug = re.sub(r"[^A-Za-z0-9]+", "_", rest).strip("_").lower() or "run"
    return f"run{num:02d}_{slug}"[:100]


def bundle_objects(runs: Sequence, titles: Sequence[str]) -> Dict[str, Pipeline]:
    """``{entry name: pipeline}`` of every finished run (one Pipeline artifact each)."""
    out: Dict[str, Pipeline] = {}
    for run, title in zip(runs, titles):
        if getattr(run, "pipeline", None) is None:
            continue
        key = entry_key(title)
        while key in out:
            key = key[:97] + "_x"
        out[key] = run.pipeline
    return out


def describe_pipeline(pipe) -> str:
    """One line about a pipeline: its steps with their classes and sizes, e.g. "DEFRAG
    (Defrag, 256 clusters) → classifier (KTXMLC, 159 labels); raw input: 1,836 features"."""
    bits = []
    for step in ("imputer", "defrag", "feature_clustering", "classifier", "reranker",
                 "selector", "vocabulary"):
        obj = getattr(pipe, step, None)
        if obj is None or (step == "defrag" and pipe.per_tree):
            continue
        extra = []
        for attr, label in (("n_clusters_", "clusters"), ("n_labels_", "labels")):
            val = getattr(obj, attr, None)
            if isinstance(val, (int, np.integer)):
                extra.append(f"{int(val):,} {label}")
        if step == "vocabulary":
            extra.append(f"{len(obj.compressors)} column(s)")
        bits.append(f"{STEP_TITLES[step]} ({type(obj).__name__}"
                    + (f", {', '.join(extra)}" if extra else "") + ")")
    text = " → ".join(bits) or "no fitted step"
    if pipe.n_features_in_ is not None:
        text += f"; raw input: {int(pipe.n_features_in_):,} features"
    return text


#: what each file of :func:`pipeline_exports` holds, by the end of its name (button labels:
#: a file name such as "run21_one_vs_all_c_0_5_defrag_d0_32_clusters.csv" is cut short there)
EXPORT_LABELS = {"_clusters.csv": "Feature clusters (CSV)",
                 "_feature_ranking.csv": "Feature ranking (CSV)",
                 "_mapping.csv": "Value → bucket mapping (CSV)",
                 "_mapping.json": "Value → bucket mapping (JSON)"}


def export_label(file_name: str) -> str:
    """The download button's label for a file of :func:`pipeline_exports`."""
    return next((label for end, label in EXPORT_LABELS.items() if file_name.endswith(end)),
                file_name)


def pipeline_exports(key: str, pipe, feature_names=None) -> List[Tuple[str, bytes, str]]:
    """(file name, bytes, mime) of the CSV/JSON files that describe a pipeline's steps
    outside featagg: feature clusters (DEFRAG / a baseline clustering), feature weights and
    ranking (BMGUFS) or the selected features, value → bucket mappings (vocabulary)."""
    files = []
    clus = pipe.feature_clustering if pipe.feature_clustering is not None else pipe.defrag
    if clus is not None:
        labels = np.asarray(clus.labels_)
        df = pd.DataFrame({"feature": np.arange(labels.size), "cluster": labels})
        if feature_names is not None and len(feature_names) == labels.size:
            df.insert(1, "feature_name", list(feature_names))
        files.append((f"{key}_clusters.csv", df.to_csv(index=False).encode(), "text/csv"))
    sel = pipe.selector
    if sel is not None and hasattr(sel, "scores_"):
        r = np.asarray(sel.scores_, dtype=float)
        order = (np.asarray(sel.order_) if hasattr(sel, "order_")
                 else np.argsort(-r, kind="stable"))
        df = pd.DataFrame({"rank": np.arange(1, r.size + 1), "feature": order,
                           "score": r[order]})
        if feature_names is not None and len(feature_names) == r.size:
            df.insert(2, "feature_name", [feature_names[j] for j in order])
        df["selected"] = np.isin(order, np.asarray(pipe.selected_ if pipe.selected_ is not None
                                                   else [], np.int64))
        files.append((f"{key}_feature_ranking.csv", df.to_csv(index=False).encode(),
                      "text/csv"))
    if pipe.vocabulary is not None:
        parts = []
        for col, vc in pipe.vocabulary.compressors.items():
            f = vc.mapping_frame()
            f.insert(0, "column", col)
            parts.append(f)
        if parts:
            files.append((f"{key}_mapping.csv",
                          pd.concat(parts, ignore_index=True).to_csv(index=False).encode(),
                          "text/csv"))
        doc = {str(c): json.loads(vc.to_json()) for c, vc in pipe.vocabulary.compressors.items()}
        files.append((f"{key}_mapping.json", json.dumps(doc).encode(), "application/json"))
    return files


def _classifier_on(model, defrags: Dict[str, Any]) -> Optional[str]:
    """The bundled Defrag a classifier of an older bundle was trained on: the one whose
    cluster count is the classifier's input size (None when none or several fit)."""
    want = getattr(model, "n_features_in_", None)
    hits = [k for k, d in defrags.items() if int(getattr(d, "n_clusters_", -1)) == want]
    return hits[0] if len(hits) == 1 else None


def pipelines_from_import(objects: Dict[str, Any], info: Optional[dict] = None
                          ) -> List[Tuple[str, Optional[Pipeline], str]]:
    """What an imported artifact or bundle holds, as ``(entry, pipeline or None, note)``.

    * Pipeline artifacts (this dashboard's Export, ``python -m featagg_core ... --out``)
      are taken as they are.
    * A bundle of the old ``train`` command (``defrag``, ``model``, ``refrag`` entries)
      becomes one pipeline (raw features in).
    * Older dashboard bundles held one object per kind: a classifier whose input size is
      a bundled DEFRAG's cluster count is joined to it (so a DEFRAG+KTXMLC pair takes raw
      features); a Defrag alone is an agglomeration pipeline.
    * REFRAG, FIAT, a block model or a vocabulary compressor on its own cannot be
      evaluated: the pipeline is None and the note says why.
    """
    if "model" in objects and not any(isinstance(o, Pipeline) for o in objects.values()):
        try:
            return [("model", as_pipeline(dict(objects), info), "the bundle of the train "
                     "command, as one pipeline")]
        except ValueError as exc:
            return [("model", None, str(exc))]
    defrags = {k: o for k, o in objects.items() if type(o).__name__ == "Defrag"}
    joins = {}
    for key, obj in objects.items():
        if type(obj).__name__ in ("KTXMLC", "OneVsAll"):
            dk = _classifier_on(obj, defrags)
            if dk is not None:
                joins[key] = dk
    out: List[Tuple[str, Optional[Pipeline], str]] = []
    for key, obj in objects.items():
        if isinstance(obj, Pipeline):
            out.append((key, obj, ""))
        elif key in joins:
            out.append((key, as_pipeline({"model": obj, "defrag": defrags[joins[key]]}),
                        f"joined to the bundled DEFRAG '{joins[key]}' it was trained on"))
        else:
            note = "the DEFRAG step on its own" if key in joins.values() else ""
            try:
                out.append((key, as_pipeline(obj), note))
            except ValueError as exc:
                out.append((key, None, str(exc)))
    return out


def pipeline_name(pipe) -> str:
    """The run name of a pipeline's spec and what its fit chose ("KTXMLC K=2 T=3 · DEFRAG
    d0=8", "KTXMLC K=16 T=3 → one flat tree"), or its step
    classes for an older artifact wrapped by ``as_pipeline`` ("Defrag + KTXMLC (older
    artifact)")."""
    if pipe.split_id is not None:
        try:
            spec = canonical_spec(pipe.spec)
            return fitted_run_name(spec, pipe)
        except (ValueError, KeyError, TypeError):
            pass
    # an older artifact: its spec only names the steps (the defaults would lie about
    # the parameters), so name it by its fitted classes
    classes = [type(getattr(pipe, s)).__name__ for s in STEP_TITLES
               if getattr(pipe, s, None) is not None and not (s == "defrag" and pipe.per_tree)]
    return " + ".join(classes) + " (older artifact)"


def manifest_summary(manifest: Dict[str, Any]) -> pd.DataFrame:
    """Key facts of an artifact manifest as a two-column table."""
    rows = [("class", manifest.get("class")), ("created", manifest.get("created")),
            ("format version", manifest.get("format_version")),
            ("dataset fingerprint", manifest.get("dataset_fingerprint"))]
    meta = manifest.get("meta") or {}
    if isinstance(meta, dict) and meta.get("split_id"):
        rows.append(("split id", meta.get("split_id")))
    params = manifest.get("params", {}) or {}
    if manifest.get("class") == "Pipeline":
        rows.append(("spec", json.dumps(params.get("spec", {}), sort_keys=True)))
    else:
        rows += [(f"param: {k}", json.dumps(v)) for k, v in params.items()]
    rows += [(f"library: {k}", v) for k, v in manifest.get("library", {}).items()]
    rows += [(f"metric at save: {k}", v) for k, v in (manifest.get("metrics") or {}).items()]
    return pd.DataFrame(rows, columns=["field", "value"]).astype({"value": str})


_PERCENT = re.compile(r"^(base )?(P|nDCG|PSP|PSnDCG|coverage)@\d+$|^(ACC|NMI|MI loss)( sd)?$")


def result_table(metrics: Dict[str, Any]) -> pd.DataFrame:
    """``experiment.evaluate``'s flat result as a small two-column table: rates in %,
    counts with thousands separators, the rest to 4 significant digits."""
    def fmt(k, v):
        if isinstance(v, (bool, np.bool_)):
            return str(v)
        if isinstance(v, (int, np.integer)):
            return f"{int(v):,}"
        if isinstance(v, (float, np.floating)):
            return f"{100 * float(v):.2f} %" if _PERCENT.match(k) else f"{float(v):.4g}"
        return str(v)
    return pd.DataFrame({"measure": list(metrics),
                         "value": [fmt(k, v) for k, v in metrics.items()]}).set_index("measure")
