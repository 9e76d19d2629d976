"""Command line: the same runs as the dashboard's pages, without a browser.

    python -m featagg_core info DATA
    python -m featagg_core agglomerate DATA --d0 8 --out defrag.fgz
    python -m featagg_core train TRAIN --test TEST --defrag 8 --refrag --out model.fgz
    python -m featagg_core predict MODEL DATA --k 5 --out scores.txt
    python -m featagg_core evaluate MODEL DATA
    python -m featagg_core select-features GRAPH --d 64 --out bmgufs.fgz
    python -m featagg_core compress TABLE --label income --budget 100 --out mapping.json
    python -m featagg_core triage DATA --out report.html --json report.json --budget-s 120

Every command that fits goes through ``featagg_core.experiment``: ``make_split`` (the
dataset's own test part when it has one, else a random 20 % of the rows / nodes;
``--test-size``, ``--valid-size``, ``--split-seed`` change it, as the dashboard's sidebar
does), ``run_pipeline`` (every step fitted on the training rows only) and ``evaluate``
(the numbers, on the test rows). ``train`` writes one Pipeline artifact; ``evaluate`` and
``predict`` also read the bundles (.fgb) older versions of ``train`` wrote, and
``evaluate`` remakes the split the model was trained on unless told otherwise.

``--scheduler ADDRESS`` (agglomerate, train, compress) fits DEFRAG and KTXMLC on an
existing Dask cluster (``featagg_core.distributed``; the same models), ``--scheduler
serial`` through the same code path in this process; ``compress`` then runs the
distributed thresholding (``--method threshold``).

Every command prints one JSON document (its summary and metrics) on stdout and its
progress on stderr. Bad input exits with status 2 and a one-line message on stderr;
Ctrl-C stops cleanly with status 130 (no traceback, no half-written file). Seeds
(``--seed`` for the estimators, ``--split-seed`` for the split) make runs reproducible.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import signal
import threading
import time
from typing import Any, Dict, List, Optional

import numpy as np

# the argparse types, the shared split options and the parser itself (names re-exported)
from featagg_core.cli import parser as _cli_parser
from featagg_core.cli.parser import _MAX_K, _float_in, _int_in, _ks, _split_args  # noqa: F401

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
#: when this process started working (``triage --budget-s`` counts from here)
_T0 = time.monotonic()


class CliError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def _progress(message: str) -> None:
    print(f"[featagg] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- loading

_GRAPH_EXT = (".edges", ".edgelist", ".graphml", ".gml", ".mat")
_TABLE_EXT = (".csv", ".tsv", ".parquet", ".pq")


def _guess_kind(path: str) -> str:
    low = path.lower()
    if low.endswith(_GRAPH_EXT):
        return "graph"
    if low.endswith(_TABLE_EXT) or low.endswith((".csv.gz", ".tsv.gz")):
        return "table"
    if low.endswith(".npz"):
        try:
            with np.load(path, allow_pickle=False) as z:
                if "kind" in z.files:
                    return str(z["kind"])
        except (OSError, ValueError):
            pass
    return "multilabel"


def _load(path: str, kind: Optional[str] = None, *, test: Optional[str] = None,
          label: Optional[str] = None, features: Optional[str] = None,
          classes: Optional[str] = None):
    from featagg_core import data as d
    if path.startswith("sample:"):
        from featagg_core.data.samples import load_sample
        try:
            return load_sample(path.split(":", 1)[1])
        except (KeyError, ValueError) as exc:
            raise CliError(str(exc))
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    kind = kind or _guess_kind(path)
    _progress(f"reading {path} as {kind}")
    if kind == "graph":
        kw = {}
        if features:
            kw["features"] = features
        if classes:
            kw["labels"] = classes
        return d.load_graph(path, **kw)
    if kind == "table":
        if not label:
            raise CliError(f"{path}: a table needs --label COLUMN (the binary label column)")
        return d.load_categorical(path, label=label)
    kw = {"test": test} if test else {}
    return d.load_dataset(path, **kw)


def _require(data, kind: str, path: str):
    if data.kind != kind:
        raise CliError(f"{path}: expected a {kind} dataset, got a {data.kind} one")
    return data


# --------------------------------------------------------------------------- runs

class Interrupted(Exception):
    """Ctrl-C: the command stopped cleanly (exit status 130, nothing half-written)."""


def _split(args, data, settings: Optional[dict] = None):
    """The split of ``data`` (``experiment.make_split``): ``--test-size`` / ``--valid-size`` /
    ``--split-seed`` when given, else ``settings`` (a model's own split), else the
    dashboard's defaults (the dataset's own test part, else a random 20 %)."""
    from featagg_core.experiment import make_split
    settings = dict(settings or {})
    kw = {"test_size": settings.get("test_size") or 0.2,
          "valid_size": settings.get("valid_size") or 0.0,
          "random_state": settings.get("random_state") or 0, "how": settings.get("how")}
    if getattr(args, "test_size", None) is not None:
        kw["test_size"] = args.test_size
        kw["how"] = "random"                  # an explicit test fraction asks for a random split
    if getattr(args, "valid_size", None) is not None:
        kw["valid_size"] = args.valid_size
    if getattr(args, "split_seed", None) is not None:
        kw["random_state"] = args.split_seed
    if kw["how"] == "dataset" and data.kind == "multilabel" and \
            (data.X_test is None or data.X_test.shape[0] == 0):
        kw["how"] = None                      # the model's data had a test part, this has not
    try:
        split = make_split(data, **kw)
    except ValueError as exc:
        raise CliError(str(exc))
    _progress(f"split: {split.describe()}")
    return split


def _run(args, data, split, spec, **kw):
    """``run_pipeline`` with progress on stderr and Ctrl-C as cancel."""
    from featagg_core.experiment import run_pipeline
    last = {"msg": None}

    def progress(fraction, message):
        head = message.split(":")[0]
        if head != last["msg"]:
            last["msg"] = head
            _progress(message)

    if getattr(args, "scheduler", None):
        kw["scheduler"] = args.scheduler
    run = run_pipeline(data, split, spec, progress=progress, cancel=args.cancel, **kw)
    if run.status == "cancelled":
        raise Interrupted()
    if run.status != "done":
        raise CliError(run.message)
    return run


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


# --------------------------------------------------------------------------- commands

def cmd_info(args) -> Dict[str, Any]:
    """``featagg info DATA``: what a dataset holds (no model is fitted).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``info``: DATA, ``--kind`` and the reader options.

    Returns
    -------
    dict
        Name, kind, fingerprint and the sizes of the data (rows, features, labels and
        non-zeros; nodes, edges and classes of a graph; rows, positives and vocabulary sizes
        of a table).

    Raises
    ------
    CliError
        For a file that is not a dataset (one line, in the user's terms).
    """
    data = _load(args.data, args.kind, test=args.test, label=args.label,
                 features=args.features, classes=args.classes)
    out: Dict[str, Any] = {"name": data.name or os.path.basename(args.data), "kind": data.kind,
                           "fingerprint": data.fingerprint}
    if data.kind == "multilabel":
        X, Y = data.X, data.Y
        out.update(n=X.shape[0], d=X.shape[1], L=Y.shape[1], nnz_X=int(X.nnz), nnz_Y=int(Y.nnz),
                   labels_per_point=float(Y.nnz / max(X.shape[0], 1)),
                   features_per_point=float(X.nnz / max(X.shape[0], 1)),
                   density=float(X.nnz / max(X.shape[0] * X.shape[1], 1)),
                   n_test=None if data.X_test is None else int(data.X_test.shape[0]))
    elif data.kind == "graph":
        A = data.A
        out.update(nodes=int(A.shape[0]), edges=int((A.nnz - A.diagonal().astype(bool).sum()) // 2
                                                    + A.diagonal().astype(bool).sum()),
                   features=int(data.X.shape[1]), nnz_features=int(data.X.nnz),
                   classes=None if data.y is None else int(len(np.unique(data.y[data.y >= 0]))))
    else:
        out.update(rows=data.n_rows, positives=int(np.sum(data.labels)), label=data.label_name,
                   vocabulary={c: int(data.table[c].nunique()) for c in data.table.columns})
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
                              "one_vs_all": args.one_vs_all, "random_state": args.seed}
        if args.max_depth is not None:
            spec["classifier"]["max_depth"] = args.max_depth
    if args.refrag:
        rr: Dict[str, Any] = {"kind": "refrag", "shortlist": args.shortlist}
        if args.alpha is not None:
            rr["alpha"] = args.alpha
        if args.gamma is not None:
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
        raise CliError(f"{path}: {exc}")


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
    from featagg_core.experiment import _evaluate
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


def cmd_select_features(args) -> Dict[str, Any]:
    """``featagg select-features GRAPH``: BMGUFS feature selection on a graph.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``select-features``: GRAPH, the BMGUFS and split options.

    Returns
    -------
    dict
        The selected features (indices and names), fit seconds, the split and the held-out
        k-means ACC/NMI when the nodes have classes; ``artifact`` when the model was saved.

    Raises
    ------
    CliError
        For data that is not a graph (one line, in the user's terms).
    """
    from featagg_core.artifacts.store import save_artifact
    data = _require(_load(args.graph, "graph", features=args.features, classes=args.classes),
                    "graph", args.graph)
    split = _split(args, data)
    # with --n-blocks unset, k is the number of node classes (of the training nodes), or the
    # eigengap rule without classes
    spec = {"feature_selection": {"kind": "bmgufs", "d": args.d, "n_blocks": args.n_blocks,
                                  "beta_bar": args.beta_bar, "gamma": args.gamma,
                                  "n_candidates": args.n_candidates, "max_iter": args.max_iter,
                                  "random_state": args.seed}}
    _progress(f"BMGUFS on the {split.train.size} training nodes of {data.A.shape[0]}, "
              f"{data.X.shape[1]} features")
    run = _run(args, data, split, spec)
    model, selected = run.pipeline.selector, run.pipeline.selected_
    names = data.feature_names
    out: Dict[str, Any] = {"method": "BMGUFS", "name": run.name,
                           "fit_seconds": round(run.timings["selection_s"], 3), "d": args.d,
                           "selected": [int(j) for j in selected],
                           "n_nonzero_weights": int(np.count_nonzero(model.scores_)),
                           "split": run.split.to_record()}
    if run.message:
        out["note"] = run.message
    if names is not None:
        out["selected_names"] = [str(names[j]) for j in selected]
    test = run.metrics["test"]
    if "ACC" in test:
        out["clustering"] = {"evaluated_on": "test", "n_nodes": test["n_rows"],
                             **{k: test[k] for k in ("ACC", "ACC sd", "NMI", "NMI sd")}}
    if args.out:
        save_artifact(model, args.out, dataset_fingerprint=data.fingerprint,
                      metrics={"split_id": split.split_id, **test})
        out["artifact"] = args.out
    return out


def cmd_compress(args) -> Dict[str, Any]:
    """``featagg compress TABLE``: vocabulary compression of categorical columns.

    Fitted here, or on a Dask scheduler with ``--scheduler``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``compress``: TABLE, ``--columns``, budget, method, split
        and output options.

    Returns
    -------
    dict
        Per column its vocabulary size, I(X;C), I(Z;C) and seconds, the total information
        loss, the split and the run's metrics; ``mapping`` when the value -> bucket map was
        written.

    Raises
    ------
    CliError
        For a table without the columns asked for (one line, in the user's terms).
    """
    data = _require(_load(args.table, "table", label=args.label), "table", args.table)
    columns = args.columns.split(",") if args.columns else list(data.table.columns)
    missing = [c for c in columns if c not in data.table.columns]
    if missing:
        raise CliError(f"{args.table}: no column(s) {', '.join(missing)}; "
                       f"columns are {', '.join(map(str, data.table.columns))}")
    split = _split(args, data)
    if args.scheduler:
        return _compress_distributed(args, data, split, columns)
    _progress(f"compressing {len(columns)} column(s) to {args.budget} buckets each, fitted "
              f"on {split.train.size} training rows")
    run = _run(args, data, split, {"vocabulary": {
        "method": args.method, "budget": args.budget, "columns": columns,
        "allocation": "per_column", "random_state": args.seed}})
    cc = run.pipeline.vocabulary
    results, mappings, loss = _column_results(cc.compressors, columns)
    out = {"method": args.method, "budget": args.budget, "columns": results, "mi_loss": loss,
           "fitted_on": "train", "name": run.name, "split": run.split.to_record(),
           "metrics": run.metrics}
    if args.out:
        from featagg_core.data import _atomic_write
        text = json.dumps({"budget": args.budget, "method": args.method, "mappings": mappings})
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["mapping"] = args.out
    return out


def _column_results(compressors, columns) -> tuple:
    """Per column (vocabulary size, I(X;C), I(Z;C), seconds), the value -> bucket maps, and
    the total information loss, of fitted per-column compressors."""
    results, mappings = [], {}
    for col in columns:
        vc = compressors[col]
        results.append({"column": col, "vocabulary": int(len(vc.vocabulary_)),
                        "I(X;C)": float(vc.mutual_information_full_),
                        "I(Z;C)": float(vc.mutual_information_),
                        "seconds": round(float(vc.fit_time_), 4)})
        mappings[col] = {str(k): int(v) for k, v in vc.mapping_.items()}
    total_x = sum(r["I(X;C)"] for r in results)
    loss = (total_x - sum(r["I(Z;C)"] for r in results)) / total_x if total_x > 0 else 0.0
    return results, mappings, loss


def _compress_distributed(args, data, split, columns) -> Dict[str, Any]:
    """``compress --scheduler``: Bateni et al.'s distributed thresholding (values counted on
    the workers) on the training rows, scored by ``experiment.evaluate`` on the test rows.
    Not a run of ``run_pipeline``: its result differs from ``method="threshold"`` on one
    machine (forced split points), so it must not share that spec's runs."""
    import time

    from featagg_core.distributed.vocab import vocabulary_distributed
    from featagg_core.experiment import evaluate, take_rows
    from featagg_core.runs.pipeline import Pipeline
    from featagg_core.vocab.compressor import ColumnCompression
    if args.method != "threshold":
        raise CliError("--scheduler: only --method threshold has a distributed twin "
                       "(Bateni et al.'s distributed thresholding); pass --method threshold")
    _progress(f"compressing {len(columns)} column(s) to {args.budget} buckets each on the "
              f"Dask scheduler {args.scheduler}, fitted on {split.train.size} training rows")
    train = take_rows(data, split, "train")
    t0 = time.perf_counter()
    comps = {col: vocabulary_distributed(args.scheduler, train.table[col].to_numpy(),
                                         train.labels, args.budget, epsilon=0.05)
             for col in columns}
    cc = ColumnCompression(comps, {c: comps[c].n_buckets_ for c in columns},
                           "threshold (distributed)", int(args.budget) * len(columns),
                           time.perf_counter() - t0)
    pipe = Pipeline(spec={"vocabulary": {"method": "threshold", "budget": args.budget,
                                         "columns": columns, "distributed": True}},
                    split_id=split.split_id, dataset_fingerprint=data.fingerprint,
                    vocabulary=cc)
    pipe.columns_ = list(columns)
    results, mappings, loss = _column_results(comps, columns)
    out = {"method": "threshold (distributed)", "budget": args.budget, "columns": results,
           "mi_loss": loss, "fitted_on": "train", "scheduler": args.scheduler,
           "name": f"Vocabulary distributed thresholding m={args.budget}",
           "split": split.to_record(), "metrics": {"test": evaluate(pipe, data, split, "test")}}
    if args.out:
        from featagg_core.data import _atomic_write
        text = json.dumps({"budget": args.budget, "method": "threshold", "distributed": True,
                           "mappings": mappings})
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["mapping"] = args.out
    return out


# --------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    """The ``featagg`` argument parser: one subcommand per ``cmd_*`` function.

    Returns
    -------
    argparse.ArgumentParser
        The parser (errors are reported as one line, exit status 2).
    """
    return _cli_parser.build(sys.modules[__name__])


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Usage errors as one line on stderr, exit status 2 (argparse prints the usage too)."""
    def error(message: str):
        print(f"featagg: error: {' '.join(str(message).split())} (see --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    stack = [parser]
    while stack:
        p = stack.pop()
        p.error = error
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())


def _install_ctrl_c(cancel: threading.Event):
    """First Ctrl-C: ask the running fit to stop (it returns at its next progress call);
    a second one interrupts at once. Returns the previous handler (None off the main
    thread, where signals cannot be caught)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        if cancel.is_set():
            raise KeyboardInterrupt()
        cancel.set()
        print("featagg: cancelling (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    return signal.signal(signal.SIGINT, handler)


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command.

    Every failure -- bad input, a damaged or foreign file, an option out of range, even an
    internal error -- is exit status 2 with one line on stderr (``FEATAGG_DEBUG=1`` adds
    the traceback).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 (the result as JSON on stdout), 2 for any failure, 130 when
        interrupted (Ctrl-C).
    """
    parser = build_parser()
    _one_line_errors(parser)
    args = parser.parse_args(argv)
    from featagg_core.artifacts.registry import ArtifactError
    from featagg_core.data import DatasetError
    args.cancel = threading.Event()
    # the process start under ``python -m``; the call itself when main() is called in-process
    args.started = _T0 if __name__ == "__main__" else time.monotonic()
    previous = _install_ctrl_c(args.cancel)
    try:
        result = args.func(args)
        if args.cancel.is_set():
            raise Interrupted()
    except (Interrupted, KeyboardInterrupt):
        print("featagg: cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (CliError, DatasetError, ArtifactError, ValueError) as exc:
        message = " ".join(str(exc).split())
        print(f"featagg: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"featagg: error: {exc.filename or ''} {exc.strerror or exc}".strip(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("featagg: error: not enough memory for this input", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback (unless debugging)
        if os.environ.get("FEATAGG_DEBUG"):
            import traceback
            traceback.print_exc()
        message = " ".join(str(exc).split())[:300]
        print(f"featagg: error: {args.command} failed ({type(exc).__name__}: {message})",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    json.dump(result, sys.stdout, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
