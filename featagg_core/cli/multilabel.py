"""The multi-label commands: ``agglomerate`` (DEFRAG), ``train`` (KTXMLC or one-vs-all,
optionally on DEFRAG features with REFRAG re-ranking), ``predict`` and ``evaluate`` (a trained
model or an older bundle), each through the run model on the split's training rows.
"""
from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

from featagg_core.cli.command import (
    CliError,
    _load,
    _progress,
    _require,
    _run,
    _split,
)


def _grouped(flat: Dict[str, float], ks) -> Dict[str, float]:
    """Ranking metrics grouped by k (P@1, nDCG@1, …, P@3, …) as the JSON shows them."""
    return {key: flat[key] for k in ks for key in flat
            if key.endswith(f"@{k}") and not key.startswith("base ")}


def _ranking_out(flat: Dict[str, float], ks) -> Dict[str, Any]:
    out: Dict[str, Any] = {"metrics": _grouped(flat, ks)}
    base = {key[5:]: v for key, v in flat.items() if key.startswith("base ")}
    if base:
        out["base_metrics"] = _grouped(base, ks)
    return out


def cmd_agglomerate(args) -> Dict[str, Any]:
    """``featagg agglomerate DATA``: DEFRAG on the training rows of a multilabel dataset.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``agglomerate``: DATA, d0, representation, split and output options.

    Returns
    -------
    dict
        The number of clusters, the clustering error, fit seconds, the split and the run's
        metrics; ``artifact`` / ``clusters_csv`` when those files were written.

    Raises
    ------
    CliError
        For data that is not a multilabel dataset (one line, in the user's terms).
    """
    from featagg_core.artifacts.store import save_artifact
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    split = _split(args, data)
    _progress(f"DEFRAG: agglomerating {data.X.shape[1]} features, d0={args.d0}, "
              f"representation={args.representation}"
              + (f" on the Dask scheduler {args.scheduler}" if args.scheduler else ""))
    run = _run(args, data, split, {"defrag": {"d0": args.d0,
                                              "representation": args.representation,
                                              "random_state": args.seed}})
    model = run.pipeline.defrag
    out = {"method": "DEFRAG", "d": int(data.X.shape[1]), "d0": args.d0,
           "representation": args.representation, "n_clusters": int(model.n_clusters_),
           "clustering_error": float(model.clustering_error_),
           "fit_seconds": round(run.timings["defrag_s"], 3), "name": run.name,
           "split": run.split.to_record(), "metrics": run.metrics}
    if args.out:
        save_artifact(model, args.out, dataset_fingerprint=data.fingerprint,
                      metrics={"clustering_error": out["clustering_error"],
                               "split_id": split.split_id})
        out["artifact"] = args.out
    if args.clusters_csv:
        from featagg_core.data import _atomic_write
        lines = "feature,cluster\n" + "".join(f"{j},{c}\n" for j, c in enumerate(model.labels_))
        _atomic_write(args.clusters_csv, lambda fh: fh.write(lines.encode()))
        out["clusters_csv"] = args.clusters_csv
    return out


def _train_spec(args) -> Dict[str, Any]:
    spec: Dict[str, Any] = {}
    if args.defrag:
        spec["defrag"] = {"d0": args.defrag, "representation": args.representation,
                          "random_state": args.seed}
    if args.method == "ova":
        spec["classifier"] = {"kind": "ova", "C": args.C, "random_state": args.seed}
    else:
        spec["classifier"] = {"kind": "ktxmlc", "n_clusters": args.n_clusters,
                              "n_trees": args.n_trees, "max_leaf_labels": args.max_leaf_labels,
                              "C": args.C, "beam_width": args.beam_width,
                              "one_vs_all": args.one_vs_all,
                              "form": getattr(args, "form", "auto"), "random_state": args.seed}
        if args.max_depth is not None:
            spec["classifier"]["max_depth"] = args.max_depth
    if args.refrag:
        rr: Dict[str, Any] = {"kind": "refrag", "shortlist": args.shortlist}
        # REFRAG as the dashboard runs it: alpha, gamma and beta tuned on validation rows
        # (featagg_core.runs.refrag_tuning) unless --alpha fixes alpha (and --gamma gamma)
        rr["tune"] = args.alpha is None
        if args.alpha is not None:
            rr["alpha"] = args.alpha
            rr["gamma"] = 1.0 if args.gamma is None else args.gamma
            rr["propensity_exponent"] = 0.5
        elif args.gamma is not None:
            rr["gamma"] = args.gamma
        if not args.defrag:
            rr["defrag"] = {"d0": 8, "representation": args.representation,
                            "random_state": args.seed}
        spec["rerank"] = rr
    return spec


def cmd_train(args) -> Dict[str, Any]:
    """``featagg train DATA``: a KTXMLC or one-vs-all classifier (optionally on DEFRAG).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``train``: DATA, the classifier, DEFRAG / REFRAG and split options.

    Returns
    -------
    dict
        The run's name and id, the fit and prediction times, the split and the ranking
        metrics on the test rows (and the validation rows); ``artifact`` when the pipeline
        was saved.

    Raises
    ------
    CliError
        For data that is not multilabel, or ``--scheduler`` with one-vs-all (one line,
        in the user's terms).
    """
    from featagg_core.artifacts.store import save_artifact
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    split = _split(args, data)
    spec = _train_spec(args)
    if args.scheduler and args.method == "ova":
        raise CliError("--scheduler: one-vs-all has no distributed twin; use --method ktxmlc")
    method = "OneVsAll" if args.method == "ova" else "KTXMLC"
    _progress(f"training {method} on {split.train.size} points, "
              f"{data.X.shape[1] if not args.defrag else 'DEFRAG-agglomerated'} features, "
              f"{data.Y.shape[1]} labels")
    run = _run(args, data, split, spec, ks=tuple(args.k))
    t = run.timings
    out: Dict[str, Any] = {"method": method, "name": run.name, "defrag_d0": args.defrag,
                           "refrag": bool(args.refrag), "run_id": run.run_id,
                           "split": run.split.to_record()}
    for key, src in (("defrag_s", "defrag_s"), ("train_s", "classifier_s"),
                     ("refrag_s", "rerank_s")):
        if src in t:
            out[key] = round(t[src], 3)
    out["predict_ms_per_point"] = round(t["predict_ms_per_point"], 4)
    out.update(_ranking_out(run.metrics["test"], args.k))
    out["evaluated_on"] = "test"
    if "valid" in run.metrics:
        out["valid_metrics"] = _grouped(run.metrics["valid"], args.k)
    if args.out:
        save_artifact(run.pipeline, args.out, dataset_fingerprint=data.fingerprint,
                      metrics=run.metrics["test"])
        out["artifact"] = args.out
    return out


def _load_pipeline(path: str):
    """A Pipeline from a Pipeline artifact, an old ``train`` bundle (.fgb) or a single
    classifier / Defrag artifact."""
    from featagg_core.artifacts.store import is_bundle, load_artifact, load_bundle
    from featagg_core.runs.pipeline import as_pipeline
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    try:
        if is_bundle(path):
            objects, info = load_bundle(path)
            return as_pipeline(objects, info)
        return as_pipeline(load_artifact(path))
    except ValueError as exc:
        message = str(exc)             # an ArtifactError already names the file
        raise CliError(message if message.startswith(path) else f"{path}: {message}")


def cmd_predict(args) -> Dict[str, Any]:
    """``featagg predict MODEL DATA``: the top-k label scores of every row.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``predict``: MODEL, DATA, ``--k`` and ``--out``.

    Returns
    -------
    dict
        ``n`` and ``k``; ``scores`` when the scores were written (one row per line,
        ``label:score`` pairs by decreasing score).

    Raises
    ------
    CliError
        For a model that does not predict labels or data of another width (one line, in
        the user's terms).
    """
    pipe = _load_pipeline(args.model)
    if pipe.kind != "classifier":
        raise CliError(f"{args.model}: a {pipe.kind.replace('_', ' ')} model does not predict "
                       "labels")
    data = _require(_load(args.data, "multilabel"), "multilabel", args.data)
    X = data.X
    if pipe.n_features_in_ is not None and X.shape[1] != pipe.n_features_in_:
        raise CliError(f"{args.data}: has {X.shape[1]:,} features; the model was fitted on "
                       f"{pipe.n_features_in_:,}")
    _progress(f"predicting top-{args.k} for {X.shape[0]} points")
    scores = pipe.predict_scores(X, args.k).tocsr()
    out: Dict[str, Any] = {"n": int(X.shape[0]), "k": args.k}
    if args.out:
        from featagg_core.data import _atomic_write
        lines = []
        for i in range(scores.shape[0]):
            lo, hi = scores.indptr[i], scores.indptr[i + 1]
            order = np.lexsort((scores.indices[lo:hi], -scores.data[lo:hi]))
            lines.append(" ".join(f"{scores.indices[lo + j]}:{scores.data[lo + j]:.6g}" for j in order))
        text = f"{scores.shape[0]} {scores.shape[1]}\n" + "\n".join(lines) + "\n"
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["scores"] = args.out
    return out


def cmd_evaluate(args) -> Dict[str, Any]:
    """``featagg evaluate MODEL DATA``: ranking metrics of a saved classifier on the test rows.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``evaluate``: MODEL, DATA, ``--k`` and the split options.

    Returns
    -------
    dict
        The metrics by cut-off, the rows scored, the prediction time per point and the
        split.

    Raises
    ------
    CliError
        For a model that is not a classifier or data it cannot score (one line, in the
        user's terms).
    """
    from featagg_core.runs.evaluation import _evaluate
    pipe = _load_pipeline(args.model)
    if pipe.kind != "classifier":
        raise CliError(f"{args.model}: evaluate scores classifiers; this is a "
                       f"{pipe.kind.replace('_', ' ')} model")
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    split = _split(args, data, pipe.split_settings)
    try:
        flat, seconds = _evaluate(pipe, data, split, "test", args.k)
    except ValueError as exc:
        raise CliError(f"{args.data}: {exc}")
    out: Dict[str, Any] = {"evaluated_on": "test", "n": int(flat["n_rows"]),
                           "predict_ms_per_point": round(1e3 * seconds / max(flat["n_rows"], 1), 4),
                           "split": split.to_record()}
    out.update(_ranking_out(flat, args.k))
    return out
