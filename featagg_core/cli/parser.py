"""The ``featagg`` command line's argument parser: the argparse types that refuse a value
saying the range, the split options every command shares, and :func:`build`, which declares
each subcommand's options and wires it to its ``cmd_*`` function (``info``, ``multilabel``,
``graph``, ``table`` and ``triage`` of this package).
"""
from __future__ import annotations

import argparse
from typing import List

def _ks(text: str) -> List[int]:
    try:
        ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k must be comma-separated integers, got {text!r}")
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError("--k values must be positive integers")
    if max(ks) > _MAX_K or len(ks) > 20:
        raise argparse.ArgumentTypeError(f"--k values must be at most {_MAX_K:,} (and at most "
                                         f"20 of them), got {text[:40]!r}")
    return ks


_MAX_K = 10_000


def _int_in(lo: int, hi: int, zero_ok: bool = False):
    """argparse type: an integer in [lo, hi] (or 0 when ``zero_ok``), written in digits;
    anything else -- '1e11', '3.5', a number beyond ``hi`` -- is refused, saying the range."""
    def parse(text: str) -> int:
        try:
            v = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number in [{lo:,}, {hi:,}], "
                                             f"got {text[:40]!r}") from None
        if not (lo <= v <= hi or (zero_ok and v == 0)):
            raise argparse.ArgumentTypeError(f"{v:,} is out of range: expected "
                                             f"{'0 or ' if zero_ok else ''}[{lo:,}, {hi:,}]")
        return v
    return parse


def _float_in(lo: float, hi: float, lo_open: bool = False):
    """argparse type: a finite number in [lo, hi] (``(lo, hi]`` with ``lo_open``)."""
    def parse(text: str) -> float:
        try:
            v = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
        if not (v == v and abs(v) != float("inf")) or v > hi or v < lo or (lo_open and v == lo):
            raise argparse.ArgumentTypeError(f"{text[:40]} is out of range: expected "
                                             f"{'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return v
    return parse


def _split_args(sp, what="rows"):
    sp.add_argument("--test-size", type=_float_in(0, 0.95, lo_open=True), default=None,
                    help=f"fraction of the {what} held out for testing: a random split (default: "
                         "the dataset's own test part when it has one, else 0.2)")
    sp.add_argument("--valid-size", type=_float_in(0, 0.95), default=None,
                    help=f"fraction of the {what} held out for validation (default 0)")
    sp.add_argument("--split-seed", type=_int_in(0, 2**32 - 1), default=None,
                    help="seed of the random split (default 0, as the dashboard's)")


def build() -> argparse.ArgumentParser:
    """The ``featagg`` argument parser, each subcommand calling its ``cmd_<name>`` function.

    Returns
    -------
    argparse.ArgumentParser
        The parser.
    """
    from featagg_core.cli.graph import cmd_select_features
    from featagg_core.cli.info import cmd_info
    from featagg_core.cli.multilabel import cmd_agglomerate, cmd_evaluate, cmd_predict, cmd_train
    from featagg_core.cli.table import cmd_compress
    from featagg_core.cli.health import add_parser as add_health
    from featagg_core.cli.triage import add_parser as add_triage
    p = argparse.ArgumentParser(
        prog="featagg",
        description="featagg: shrink and organise huge sparse feature and label spaces. Each "
                    "command prints a JSON summary on stdout and progress on stderr. DATA may be "
                    "a file (XC text, svmlight, ARFF, npz, edge list, GraphML, GML, .mat, CSV, TSV, "
                    "parquet) or sample:NAME for a bundled sample (e.g. sample:bibtex).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp, seed=True):
        if seed:
            sp.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0, help="random seed (default 0)")

    def scheduler(sp):
        sp.add_argument("--scheduler", metavar="ADDRESS",
                        help="fit on the Dask cluster at ADDRESS (tcp://host:8786), or "
                             "'serial' for the distributed code path in this process")

    def fitting(sp, func, what="rows", cluster=False):
        """The options every fitting command ends with, and the function it runs."""
        _split_args(sp, what)
        common(sp)
        if cluster:
            scheduler(sp)
        sp.set_defaults(func=func)

    s = sub.add_parser("info", help="statistics of a dataset, graph or table")
    s.add_argument("data", help="dataset file or sample:NAME")
    s.add_argument("--kind", choices=["multilabel", "graph", "table"],
                   help="how to read DATA (default: guessed from the file name)")
    s.add_argument("--test", help="held-out split file for a multi-label dataset")
    s.add_argument("--label", help="label column of a table")
    s.add_argument("--features", help="node-feature file of a graph")
    s.add_argument("--classes", help="node-class file of a graph")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("agglomerate", help="DEFRAG: cluster features into a balanced tree "
                                           "(fitted on the training rows of the split)")
    s.add_argument("data", help="multi-label dataset file or sample:NAME")
    s.add_argument("--test", help="held-out test file (the dataset's own test part)")
    s.add_argument("--d0", type=_int_in(1, 1_000_000), default=8, help="largest leaf cluster (default 8)")
    s.add_argument("--representation", choices=["XY", "X"], default="XY",
                   help="feature representation: XY = label-weighted XᵀY rows, X = data columns")
    s.add_argument("--out", help="write the fitted Defrag artifact here")
    s.add_argument("--clusters-csv", help="write feature,cluster CSV here")
    fitting(s, cmd_agglomerate, cluster=True)

    s = sub.add_parser("train", help="train KTXMLC or one-vs-all (optionally on DEFRAG features, "
                                     "with REFRAG re-ranking) on the training rows; evaluates "
                                     "on the test rows")
    s.add_argument("data", help="training set file or sample:NAME (a sample's test split is used)")
    s.add_argument("--test", help="held-out test file (the dataset's own test part)")
    s.add_argument("--method", choices=["ktxmlc", "ova"], default="ktxmlc",
                   help="ktxmlc = K-way label trees; ova = one-vs-all baseline")
    s.add_argument("--n-clusters", type=_int_in(2, 100_000), default=16, help="K, at most this many children per tree node (default 16, KTXMLC's)")
    s.add_argument("--n-trees", type=_int_in(1, 1_000), default=3, help="trees in the ensemble (default 3)")
    s.add_argument("--max-depth", type=_int_in(1, 1_000), default=None, help="tree depth cap (default: library's)")
    s.add_argument("--max-leaf-labels", type=_int_in(1, 1_000_000), default=100, help="labels per leaf (default 100)")
    s.add_argument("--C", type=_float_in(0, 1e6, lo_open=True), default=0.5, help="SVM cost (default 0.5)")
    s.add_argument("--beam-width", type=_int_in(1, 100_000), default=10, help="beam width at prediction (default 10)")
    s.add_argument("--one-vs-all", choices=["auto", "never"], default="auto",
                   help="auto (KTXMLC's default): one flat one-vs-all tree instead of the "
                        "trees when the beam reaches every leaf cluster and that costs no "
                        "more training work; never: always the trees")
    s.add_argument("--form", choices=["auto", "trees", "flat"], default="auto",
                   help="auto (KTXMLC's default): choose the flat model or the trees and C "
                        "among C/2, C, 2C on 20%% validation rows of the training rows; "
                        "trees / flat: that form at --C")
    s.add_argument("--defrag", type=_int_in(1, 1_000_000, zero_ok=True), metavar="D0", default=0,
                   help="agglomerate features with DEFRAG (leaf size D0) before training")
    s.add_argument("--representation", choices=["XY", "X"], default="XY",
                   help="DEFRAG representation (default XY)")
    s.add_argument("--refrag", action="store_true", help="add REFRAG rare-label re-ranking")
    s.add_argument("--alpha", type=_float_in(0, 1),
                   help="REFRAG mixing weight, fixed (default: alpha, gamma and beta tuned on "
                        "validation rows, as the dashboard does)")
    s.add_argument("--gamma", type=_float_in(0, 1e6), help="REFRAG affinity bandwidth (default: library's)")
    s.add_argument("--shortlist", type=_int_in(1, 1_000_000), default=100, help="labels re-ranked by REFRAG (default 100)")
    s.add_argument("--k", type=_ks, default=[1, 3, 5], help="cut-offs, e.g. 1,3,5")
    s.add_argument("--out", help="write the trained pipeline (one artifact) here")
    fitting(s, cmd_train, cluster=True)

    s = sub.add_parser("predict", help="top-k labels of each point with a trained model or bundle")
    s.add_argument("model", help="artifact or bundle written by train")
    s.add_argument("data", help="multi-label dataset file or sample:NAME")
    s.add_argument("--k", type=_int_in(1, _MAX_K), default=5, help="labels per point (default 5)")
    s.add_argument("--out", help="write scores as text: header 'N L', then 'label:score ...'")
    s.set_defaults(func=cmd_predict)

    s = sub.add_parser("evaluate", help="P@k, nDCG@k, PSP@k, PSnDCG@k, coverage@k of a model")
    s.add_argument("model", help="artifact or bundle written by train")
    s.add_argument("data", help="dataset or sample:NAME; scored on the test rows of the split "
                                "the model was trained on (or of the one given here)")
    s.add_argument("--test", help="held-out test file (the dataset's own test part)")
    s.add_argument("--k", type=_ks, default=[1, 3, 5], help="cut-offs, e.g. 1,3,5")
    _split_args(s)
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("select-features", help="BMGUFS: pick node features guided by a block "
                                               "model (fitted on the training nodes' subgraph)")
    s.add_argument("graph", help="graph file (edge list, GraphML, GML, .mat, npz) or sample:NAME")
    s.add_argument("--features", help="node-feature file (for an edge list)")
    s.add_argument("--classes", help="node-class file (optional; enables ACC/NMI)")
    s.add_argument("--n-blocks", type=_int_in(1, 100_000), default=None, help="blocks k (default: the number of node classes; without classes, the eigengap rule of the graph)")
    s.add_argument("--beta-bar", type=_float_in(0, 1), default=0.6, help="composition ratio β̄ (default 0.6)")
    s.add_argument("--gamma", type=_float_in(0, 1e6), default=2.0, help="sparsity γ (default 2.0)")
    s.add_argument("--n-candidates", type=_int_in(1, 1_000), default=10, help="block-model restarts (default 10)")
    s.add_argument("--max-iter", type=_int_in(0, 1_000_000), default=200, help="gradient iterations (default 200)")
    s.add_argument("--d", type=_int_in(1, 10_000_000), default=64, help="features to select (default 64)")
    s.add_argument("--out", help="write the fitted BMGUFS artifact here")
    fitting(s, cmd_select_features, "nodes")

    s = sub.add_parser("compress", help="compress categorical vocabularies to a budget of buckets "
                                        "(counts from the training rows)")
    s.add_argument("table", help="CSV, TSV or parquet table, or sample:NAME")
    s.add_argument("--label", help="binary label column (required for files)")
    binarise = s.add_mutually_exclusive_group()
    binarise.add_argument("--positive", metavar="VALUE",
                          help="the label value that is the positive class (a label column "
                               "with more than two values)")
    binarise.add_argument("--threshold", metavar="T", type=float,
                          help="a numeric label column: rows with label >= T are the "
                               "positive class (e.g. --threshold 4 for ratings 1-5)")
    s.add_argument("--columns", help="comma-separated columns (default: all but the label)")
    s.add_argument("--budget", type=_int_in(1, 10_000_000), default=100, help="buckets per column (default 100)")
    s.add_argument("--method", default="submodular",
                   choices=["submodular", "threshold", "dp", "frequency", "bucketing", "divisive"],
                   help="compression method (default submodular)")
    s.add_argument("--out", help="write the value→bucket mappings as JSON here")
    fitting(s, cmd_compress, cluster=True)

    add_triage(sub, _split_args, common)
    add_health(sub, _split_args)
    return p
