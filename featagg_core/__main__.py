"""Command line: the same runs as the dashboard's pages, without a browser.

    python -m featagg_core info DATA
    python -m featagg_core agglomerate DATA --d0 8 --out defrag.fgz
    python -m featagg_core train TRAIN --test TEST --defrag 8 --refrag --out model.fgb
    python -m featagg_core predict MODEL DATA --k 5 --out scores.txt
    python -m featagg_core evaluate MODEL DATA
    python -m featagg_core select-features GRAPH --d 64 --out bmgufs.fgz
    python -m featagg_core compress TABLE --label income --budget 100 --out mapping.json

``--scheduler ADDRESS`` (agglomerate, train, compress) runs the fits on an existing Dask
cluster (``featagg_core.distributed``; same results), ``--scheduler serial`` the same code
path in this process.

Every command prints one JSON document (its summary and metrics) on stdout and its
progress on stderr. Bad input exits with status 2 and a one-line message on stderr.
Seeds (``--seed``) make runs reproducible.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

import numpy as np

EXIT_BAD_INPUT = 2


class CliError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def _progress(message: str) -> None:
    print(f"[featagg] {message}", file=sys.stderr, flush=True)


def _ks(text: str) -> List[int]:
    try:
        ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k must be comma-separated integers, got {text!r}")
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError("--k values must be positive integers")
    return ks


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
    from . import data as d
    if path.startswith("sample:"):
        from .samples import load_sample
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


def _eval_split(data):
    """(X, Y, name) of the held-out split when there is one, else of the training data."""
    if data.X_test is not None and data.Y_test is not None:
        return data.X_test, data.Y_test, "test"
    return data.X, data.Y, "train"


# --------------------------------------------------------------------------- commands

def cmd_info(args) -> Dict[str, Any]:
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


def _fit_defrag(X, Y, d0: int, representation: str, seed: int, scheduler=None):
    from .distributed import fit_defrag
    where = f" on the Dask scheduler {scheduler}" if scheduler else ""
    _progress(f"DEFRAG: agglomerating {X.shape[1]} features, d0={d0}, "
              f"representation={representation}{where}")
    t0 = time.perf_counter()
    model = fit_defrag(X, Y if representation == "XY" else None, scheduler=scheduler, d0=d0,
                       representation=representation, random_state=seed)
    return model, time.perf_counter() - t0


def cmd_agglomerate(args) -> Dict[str, Any]:
    from .artifacts import save_artifact
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    model, seconds = _fit_defrag(data.X, data.Y, args.d0, args.representation, args.seed,
                                 args.scheduler)
    out = {"method": "DEFRAG", "d": int(data.X.shape[1]), "d0": args.d0,
           "representation": args.representation, "n_clusters": int(model.n_clusters_),
           "clustering_error": float(model.clustering_error_), "fit_seconds": round(seconds, 3)}
    if args.out:
        save_artifact(model, args.out, dataset_fingerprint=data.fingerprint, metrics=out)
        out["artifact"] = args.out
    if args.clusters_csv:
        from .data import _atomic_write
        lines = "feature,cluster\n" + "".join(f"{j},{c}\n" for j, c in enumerate(model.labels_))
        _atomic_write(args.clusters_csv, lambda fh: fh.write(lines.encode()))
        out["clusters_csv"] = args.clusters_csv
    return out


def _ranking_metrics(Y_true, scores, ks, inv_prop) -> Dict[str, float]:
    """P@k, nDCG@k, PSP@k, PSnDCG@k and coverage@k, grouped by k as the JSON shows them."""
    from .metrics import ranking_metrics
    flat = ranking_metrics(Y_true, scores, ks, inv_prop)
    return {key: flat[key] for k in ks for key in flat if key.endswith(f"@{k}")}


class _Pipeline:
    """The roles of a trained bundle: optional ``defrag`` → ``model`` → optional ``refrag``."""

    def __init__(self, objects: Dict[str, Any], info: Dict[str, Any]):
        if "model" not in objects:
            raise CliError("the bundle holds no 'model' entry")
        self.defrag = objects.get("defrag")
        self.model = objects["model"]
        self.refrag = objects.get("refrag")
        self.info = info

    def scores(self, X, k: int):
        shortlist = max(k, int(self.info.get("shortlist", 100))) if self.refrag is not None else k
        Xm = self.defrag.transform(X) if self.defrag is not None else X
        scores = self.model.predict_scores(Xm, k=shortlist)
        if self.refrag is not None:
            scores = self.refrag.rerank(X, scores, k=k)
        return scores


def _load_pipeline(path: str) -> _Pipeline:
    from .artifacts import is_bundle, load_artifact, load_bundle
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    if is_bundle(path):
        objects, info = load_bundle(path)
        return _Pipeline(objects, info)
    return _Pipeline({"model": load_artifact(path)}, {})


def cmd_train(args) -> Dict[str, Any]:
    from .artifacts import save_bundle
    from .metrics import inverse_propensity
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    X, Y = data.X, data.Y
    objects: Dict[str, Any] = {}
    timings: Dict[str, float] = {}
    if args.defrag:
        defrag, timings["defrag_s"] = _fit_defrag(X, Y, args.defrag, args.representation,
                                                  args.seed, args.scheduler)
        objects["defrag"] = defrag
        Xm = defrag.transform(X)
    else:
        Xm = X
    from .ktxmlc import KTXMLC, OneVsAll
    if args.scheduler and args.method == "ova":
        raise CliError("--scheduler: one-vs-all has no distributed twin; use --method ktxmlc")
    if args.method == "ova":
        model = OneVsAll(C=args.C, random_state=args.seed)
    else:
        kw = dict(n_clusters=args.n_clusters, n_trees=args.n_trees,
                  max_leaf_labels=args.max_leaf_labels, C=args.C, beam_width=args.beam_width,
                  random_state=args.seed)
        if args.max_depth is not None:
            kw["max_depth"] = args.max_depth
        model = KTXMLC(**kw)
    _progress(f"training {type(model).__name__} on {Xm.shape[0]} points, {Xm.shape[1]} features, "
              f"{Y.shape[1]} labels")
    t0 = time.perf_counter()
    if args.scheduler:
        from .distributed import fit_ktxmlc
        model = fit_ktxmlc(Xm, Y, scheduler=args.scheduler, **model.get_params())
    else:
        model.fit(Xm, Y)
    timings["train_s"] = time.perf_counter() - t0
    objects["model"] = model
    if args.refrag:
        from .refrag import Refrag
        if "defrag" in objects:
            rdefrag = objects["defrag"]
        else:
            rdefrag, timings["defrag_s"] = _fit_defrag(X, Y, 8, args.representation, args.seed,
                                                       args.scheduler)
            objects["refrag_defrag"] = rdefrag
        _progress("REFRAG: building label prototypes")
        t0 = time.perf_counter()
        kw = {}
        if args.alpha is not None:
            kw["alpha"] = args.alpha
        if args.gamma is not None:
            kw["gamma"] = args.gamma
        objects["refrag"] = Refrag(**kw).fit(X, Y, rdefrag)
        timings["refrag_s"] = time.perf_counter() - t0
    info = {"method": type(model).__name__, "shortlist": args.shortlist, "k": max(args.k)}
    out: Dict[str, Any] = {"method": info["method"], "defrag_d0": args.defrag,
                           "refrag": bool(args.refrag),
                           **{k: round(v, 3) for k, v in timings.items()}}
    Xe, Ye, split = _eval_split(data)
    if split == "test":
        pipe = _Pipeline(objects, info)
        t0 = time.perf_counter()
        scores = pipe.scores(Xe, max(args.k))
        out["predict_ms_per_point"] = round(1e3 * (time.perf_counter() - t0) / max(Xe.shape[0], 1), 4)
        out["metrics"] = _ranking_metrics(Ye, scores, args.k, inverse_propensity(Y))
        out["evaluated_on"] = "test"
    if args.out:
        save_bundle(objects, args.out, info=info, dataset_fingerprint=data.fingerprint)
        out["artifact"] = args.out
    return out


def cmd_predict(args) -> Dict[str, Any]:
    pipe = _load_pipeline(args.model)
    data = _require(_load(args.data, "multilabel"), "multilabel", args.data)
    X = data.X
    _progress(f"predicting top-{args.k} for {X.shape[0]} points")
    scores = pipe.scores(X, args.k).tocsr()
    out: Dict[str, Any] = {"n": int(X.shape[0]), "k": args.k}
    if args.out:
        from .data import _atomic_write
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
    from .metrics import inverse_propensity
    pipe = _load_pipeline(args.model)
    data = _require(_load(args.data, "multilabel", test=args.test), "multilabel", args.data)
    Xe, Ye, split = _eval_split(data)
    n_labels = int(getattr(pipe.model, "n_labels_", Ye.shape[1]))
    if Ye.shape[1] != n_labels:
        raise CliError(f"{args.data}: the data has {Ye.shape[1]} labels, the model {n_labels}")
    t0 = time.perf_counter()
    scores = pipe.scores(Xe, max(args.k))
    ms = 1e3 * (time.perf_counter() - t0) / max(Xe.shape[0], 1)
    inv = inverse_propensity(data.Y)
    return {"evaluated_on": split, "n": int(Xe.shape[0]), "predict_ms_per_point": round(ms, 4),
            "metrics": _ranking_metrics(Ye, scores, args.k, inv)}


def cmd_select_features(args) -> Dict[str, Any]:
    from .artifacts import save_artifact
    from .bmgufs import BMGUFS
    data = _require(_load(args.graph, "graph", features=args.features, classes=args.classes),
                    "graph", args.graph)
    model = BMGUFS(n_blocks=args.n_blocks, beta_bar=args.beta_bar, gamma=args.gamma,
                   n_candidates=args.n_candidates, max_iter=args.max_iter, random_state=args.seed)
    _progress(f"BMGUFS on {data.A.shape[0]} nodes, {data.X.shape[1]} features")
    t0 = time.perf_counter()
    # with --n-blocks unset, k defaults to the number of node classes (when the graph has them)
    model.fit(data.A, data.X, None if data.y is None else data.y)
    seconds = time.perf_counter() - t0
    selected = model.select(args.d)
    names = data.feature_names
    out: Dict[str, Any] = {"method": "BMGUFS", "fit_seconds": round(seconds, 3), "d": args.d,
                           "selected": [int(j) for j in selected],
                           "n_nonzero_weights": int(np.count_nonzero(model.scores_))}
    if names is not None:
        out["selected_names"] = [str(names[j]) for j in selected]
    if data.y is not None and len(selected):
        from .graph_eval import evaluate_selection
        out["clustering"] = evaluate_selection(data.X, data.y, selected, random_state=args.seed)
    if args.out:
        save_artifact(model, args.out, dataset_fingerprint=data.fingerprint)
        out["artifact"] = args.out
    return out


def cmd_compress(args) -> Dict[str, Any]:
    from .vocab import VocabularyCompressor
    data = _require(_load(args.table, "table", label=args.label), "table", args.table)
    columns = args.columns.split(",") if args.columns else list(data.table.columns)
    missing = [c for c in columns if c not in data.table.columns]
    if missing:
        raise CliError(f"{args.table}: no column(s) {', '.join(missing)}; "
                       f"columns are {', '.join(map(str, data.table.columns))}")
    if args.scheduler and args.method != "threshold":
        raise CliError("--scheduler: only --method threshold has a distributed twin "
                       "(Bateni et al.'s distributed thresholding); pass --method threshold")
    results, mappings = [], {}
    for col in columns:
        values = data.table[col].astype(str).to_numpy()
        _progress(f"compressing column {col} ({len(set(values))} values) to {args.budget} buckets")
        t0 = time.perf_counter()
        if args.scheduler:
            from .distributed import vocabulary_distributed
            vc = vocabulary_distributed(args.scheduler, values, data.labels, args.budget,
                                        epsilon=0.05)
        else:
            vc = VocabularyCompressor(args.budget, method=args.method, random_state=args.seed)
            vc.fit(values, data.labels)
        results.append({"column": col, "vocabulary": int(len(vc.mapping_)),
                        "I(X;C)": float(vc.mutual_information_full_),
                        "I(Z;C)": float(vc.mutual_information_),
                        "seconds": round(time.perf_counter() - t0, 4)})
        mappings[col] = {str(k): int(v) for k, v in vc.mapping_.items()}
    total_x = sum(r["I(X;C)"] for r in results)
    loss = (total_x - sum(r["I(Z;C)"] for r in results)) / total_x if total_x > 0 else 0.0
    out = {"method": args.method, "budget": args.budget, "columns": results, "mi_loss": loss}
    if args.out:
        from .data import _atomic_write
        text = json.dumps({"budget": args.budget, "method": args.method, "mappings": mappings})
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["mapping"] = args.out
    return out


# --------------------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m featagg_core",
        description="featagg: shrink and organise huge sparse feature and label spaces. Each "
                    "command prints a JSON summary on stdout and progress on stderr. DATA may be "
                    "a file (XC text, svmlight, ARFF, npz, edge list, GraphML, GML, .mat, CSV, TSV, "
                    "parquet) or sample:NAME for a bundled sample (e.g. sample:bibtex).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp, seed=True):
        if seed:
            sp.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    def scheduler(sp):
        sp.add_argument("--scheduler", metavar="ADDRESS",
                        help="fit on the Dask cluster at ADDRESS (tcp://host:8786), or "
                             "'serial' for the distributed code path in this process")

    s = sub.add_parser("info", help="statistics of a dataset, graph or table")
    s.add_argument("data", help="dataset file or sample:NAME")
    s.add_argument("--kind", choices=["multilabel", "graph", "table"],
                   help="how to read DATA (default: guessed from the file name)")
    s.add_argument("--test", help="held-out split file for a multi-label dataset")
    s.add_argument("--label", help="label column of a table")
    s.add_argument("--features", help="node-feature file of a graph")
    s.add_argument("--classes", help="node-class file of a graph")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("agglomerate", help="DEFRAG: cluster features into a balanced tree")
    s.add_argument("data", help="multi-label dataset file or sample:NAME")
    s.add_argument("--test", help="held-out split file (not used for fitting)")
    s.add_argument("--d0", type=int, default=8, help="largest leaf cluster (default 8)")
    s.add_argument("--representation", choices=["XY", "X"], default="XY",
                   help="feature representation: XY = label-weighted XᵀY rows, X = data columns")
    s.add_argument("--out", help="write the fitted Defrag artifact here")
    s.add_argument("--clusters-csv", help="write feature,cluster CSV here")
    common(s)
    scheduler(s)
    s.set_defaults(func=cmd_agglomerate)

    s = sub.add_parser("train", help="train KTXMLC or one-vs-all (optionally on DEFRAG features, "
                                     "with REFRAG re-ranking); evaluates on --test")
    s.add_argument("data", help="training set file or sample:NAME (a sample's test split is used)")
    s.add_argument("--test", help="held-out split to evaluate on")
    s.add_argument("--method", choices=["ktxmlc", "ova"], default="ktxmlc",
                   help="ktxmlc = K-way label trees; ova = one-vs-all baseline")
    s.add_argument("--n-clusters", type=int, default=2, help="K, children per tree node (default 2)")
    s.add_argument("--n-trees", type=int, default=3, help="trees in the ensemble (default 3)")
    s.add_argument("--max-depth", type=int, default=None, help="tree depth cap (default: library's)")
    s.add_argument("--max-leaf-labels", type=int, default=100, help="labels per leaf (default 100)")
    s.add_argument("--C", type=float, default=1.0, help="SVM cost (default 1.0)")
    s.add_argument("--beam-width", type=int, default=10, help="beam width at prediction (default 10)")
    s.add_argument("--defrag", type=int, metavar="D0", default=0,
                   help="agglomerate features with DEFRAG (leaf size D0) before training")
    s.add_argument("--representation", choices=["XY", "X"], default="XY",
                   help="DEFRAG representation (default XY)")
    s.add_argument("--refrag", action="store_true", help="add REFRAG rare-label re-ranking")
    s.add_argument("--alpha", type=float, help="REFRAG mixing weight (default: library's)")
    s.add_argument("--gamma", type=float, help="REFRAG affinity bandwidth (default: library's)")
    s.add_argument("--shortlist", type=int, default=100, help="labels re-ranked by REFRAG (default 100)")
    s.add_argument("--k", type=_ks, default=[1, 3, 5], help="cut-offs, e.g. 1,3,5")
    s.add_argument("--out", help="write the trained bundle here")
    common(s)
    scheduler(s)
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("predict", help="top-k labels of each point with a trained model or bundle")
    s.add_argument("model", help="artifact or bundle written by train")
    s.add_argument("data", help="multi-label dataset file or sample:NAME")
    s.add_argument("--k", type=int, default=5, help="labels per point (default 5)")
    s.add_argument("--out", help="write scores as text: header 'N L', then 'label:score ...'")
    s.set_defaults(func=cmd_predict)

    s = sub.add_parser("evaluate", help="P@k, nDCG@k, PSP@k, PSnDCG@k, coverage@k of a model")
    s.add_argument("model", help="artifact or bundle written by train")
    s.add_argument("data", help="dataset (its test split is used when it has one) or sample:NAME")
    s.add_argument("--test", help="held-out split file")
    s.add_argument("--k", type=_ks, default=[1, 3, 5], help="cut-offs, e.g. 1,3,5")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("select-features", help="BMGUFS: pick node features guided by a block model")
    s.add_argument("graph", help="graph file (edge list, GraphML, GML, .mat, npz) or sample:NAME")
    s.add_argument("--features", help="node-feature file (for an edge list)")
    s.add_argument("--classes", help="node-class file (optional; enables ACC/NMI)")
    s.add_argument("--n-blocks", type=int, default=None, help="blocks k (default: the number of node classes; required without classes)")
    s.add_argument("--beta-bar", type=float, default=0.6, help="composition ratio β̄ (default 0.6)")
    s.add_argument("--gamma", type=float, default=2.0, help="sparsity γ (default 2.0)")
    s.add_argument("--n-candidates", type=int, default=10, help="block-model restarts (default 10)")
    s.add_argument("--max-iter", type=int, default=200, help="gradient iterations (default 200)")
    s.add_argument("--d", type=int, default=64, help="features to select (default 64)")
    s.add_argument("--out", help="write the fitted BMGUFS artifact here")
    common(s)
    s.set_defaults(func=cmd_select_features)

    s = sub.add_parser("compress", help="compress categorical vocabularies to a budget of buckets")
    s.add_argument("table", help="CSV, TSV or parquet table, or sample:NAME")
    s.add_argument("--label", help="binary label column (required for files)")
    s.add_argument("--columns", help="comma-separated columns (default: all but the label)")
    s.add_argument("--budget", type=int, default=100, help="buckets per column (default 100)")
    s.add_argument("--method", default="submodular",
                   choices=["submodular", "threshold", "dp", "frequency", "bucketing", "divisive"],
                   help="compression method (default submodular)")
    s.add_argument("--out", help="write the value→bucket mappings as JSON here")
    common(s)
    scheduler(s)
    s.set_defaults(func=cmd_compress)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .artifacts import ArtifactError
    from .data import DatasetError
    try:
        result = args.func(args)
    except (CliError, DatasetError, ArtifactError, ValueError) as exc:
        message = " ".join(str(exc).split())
        print(f"featagg: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"featagg: error: {exc.filename or ''} {exc.strerror or exc}".strip(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except RuntimeError as exc:  # distributed.ClusterError: the cluster lost work
        from .distributed import ClusterError
        if not isinstance(exc, ClusterError):
            raise
        print(f"featagg: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
