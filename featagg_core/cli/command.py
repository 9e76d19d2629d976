"""What every ``featagg`` command shares: its errors (:class:`CliError`, exit status 2;
:class:`Interrupted`, Ctrl-C), progress lines on stderr, reading DATA (the kind guessed from
the file name, or a bundled sample), the split a command fits on (the dashboard's defaults
unless ``--test-size`` / ``--valid-size`` / ``--split-seed`` say otherwise) and a run of
``run_pipeline`` with Ctrl-C as its cancel.
"""
from __future__ import annotations

import os
import stat
import sys
from typing import Any, Dict, Optional

import numpy as np


class CliError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


#: the options that name a file a command writes
_OUTPUT_OPTIONS = ("out", "json", "clusters_csv")
#: the options that name a file a command reads (positional DATA, MODEL, ... included)
_INPUT_OPTIONS = ("data", "model", "graph", "table", "test", "features", "classes",
                  "labels_xml", "xml", "replay")


def _file_id(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _check_paths(args) -> None:
    """Before a command runs: every input it names that exists is a regular file (a FIFO
    would block, a device or folder is no dataset), and every file it writes is a new path
    or a regular file that is none of its inputs (same resolved path or same inode, a hard
    link included). Raises CliError (exit status 2); nothing is read or written yet."""
    from featagg_core.data._input import _check_output_path
    inputs = []
    for key in _INPUT_OPTIONS:
        value = getattr(args, key, None)
        if not isinstance(value, str) or not value or value.startswith("sample:"):
            continue
        try:
            mode = os.stat(value).st_mode
        except OSError:
            continue                      # missing: the reader says so in its own words
        if not stat.S_ISREG(mode):
            what = ("a pipe (FIFO)" if stat.S_ISFIFO(mode) else
                    "a folder" if stat.S_ISDIR(mode) else "a device or socket")
            raise CliError(f"{value}: is {what}, not a regular file; give a dataset file")
        inputs.append(value)
    for key in _OUTPUT_OPTIONS:
        value = getattr(args, key, None)
        if not isinstance(value, str) or not value:
            continue
        option = "--" + key.replace("_", "-")
        try:
            _check_output_path(value)
        except OSError as exc:
            raise CliError(f"{option} {value}: {exc.strerror}") from None
        out_id, out_real = _file_id(value), os.path.realpath(value)
        for src in inputs:
            if os.path.realpath(src) == out_real or (out_id is not None and
                                                     _file_id(src) == out_id):
                raise CliError(f"{option} {value} is the input file {src}: writing it would "
                               "destroy the input; choose another file name")
    outs = [getattr(args, k, None) for k in _OUTPUT_OPTIONS]
    outs = [os.path.realpath(v) for v in outs if isinstance(v, str) and v]
    if len(set(outs)) != len(outs):
        raise CliError("two output options name the same file; give each its own")


def _progress(message: str) -> None:
    print(f"[featagg] {message}", file=sys.stderr, flush=True)


_GRAPH_EXT = (".edges", ".edgelist", ".graphml", ".gml", ".mat")
_TABLE_EXT = (".csv", ".tsv", ".parquet", ".pq")


def _guess_kind(path: str) -> str:
    low = path.lower()
    if low.endswith(_GRAPH_EXT):
        return "graph"
    if low.endswith(_TABLE_EXT) or low.endswith((".csv.gz", ".tsv.gz")):
        return "table"
    if low.endswith(".npz"):
        # from the member names only: a kind.npy may inflate to gigabytes
        from featagg_core.data.npz import _npz_kind
        return _npz_kind(path) or "multilabel"
    return "multilabel"


def _load(path: str, kind: Optional[str] = None, *, test: Optional[str] = None,
          label: Optional[str] = None, features: Optional[str] = None,
          classes: Optional[str] = None, positive: Optional[str] = None,
          threshold: Optional[float] = None, xml: Optional[str] = None,
          n_labels: Optional[int] = None):
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
        return d.load_categorical(path, label=label, positive=positive, threshold=threshold)
    if n_labels is not None and n_labels < 1:
        raise CliError("--label-columns must be a positive number of columns")
    kw: Dict[str, Any] = {"test": test} if test else {}
    if xml:
        kw["xml"] = xml
    if n_labels:
        kw["n_labels"] = n_labels
    return d.load_dataset(path, **kw)


def _require(data, kind: str, path: str):
    if data.kind != kind:
        raise CliError(f"{path}: expected a {kind} dataset, got a {data.kind} one")
    return data


class Interrupted(Exception):
    """Ctrl-C: the command stopped cleanly (exit status 130, nothing half-written)."""


def _split(args, data, settings: Optional[dict] = None):
    """The split of ``data`` (``runs.split.make_split``): ``--test-size`` / ``--valid-size`` /
    ``--split-seed`` when given, else ``settings`` (a model's own split), else the
    dashboard's defaults (the dataset's own test part, else a random 20 %)."""
    from featagg_core.runs.split import make_split
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
    from featagg_core.runs.run import run_pipeline
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
