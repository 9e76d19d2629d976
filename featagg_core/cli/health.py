"""The ``health`` command of ``python -m featagg_core`` (registered by :mod:`featagg_core.cli.parser`).

    python -m featagg_core health DATA [--test TEST] [--xml XML] [--json OUT]

Runs :func:`featagg_core.health.check` and prints its alerts in plain words, most serious
first (nothing else on stdout); ``--json OUT`` writes ``{"alerts": [...]}`` atomically.
Exit status 0 whenever the checks ran, whatever they found; 2 for input they cannot read.
DATA is any file the readers take, or ``sample:NAME``. A multi-label dataset is checked
against its test part (``--test``, or the one a sample ships); ``--test-size`` /
``--valid-size`` / ``--split-seed`` ask for a random split instead. A table is checked on
the split ``compress`` fits on (the dashboard's default unless those options say
otherwise), so values seen only in its test rows are found. A table whose label column
holds numbers (which the table reader refuses without a threshold) gets the thresholds to
offer (``numeric_label``) and the other table checks too, run on the table read with the
first threshold offered (the median: rows at or above it positive); the alert says so.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from featagg_core.cli.command import CliError, _progress, _split
from featagg_core.cli.command import _load as _load_data

__all__ = ["add_parser", "cmd_health"]


def add_parser(sub, split_args) -> None:
    """Register ``health``.

    Parameters
    ----------
    sub : argparse subparsers action
        Where to add the subcommand.
    split_args : callable
        Adds the shared split options to a parser.
    """
    s = sub.add_parser("health", help="data-health checks: duplicates, train/test overlap, "
                                      "conflicting or likely wrong labels, empty rows, ... "
                                      "(prints the alerts, most serious first)")
    s.add_argument("data", help="dataset file or sample:NAME (multi-label, graph or table)")
    s.add_argument("--test", help="a multi-label dataset's test part (same format)")
    s.add_argument("--xml", "--labels-xml", dest="xml",
                   help="MULAN's label file of an ARFF dataset")
    s.add_argument("--label-columns", type=int,
                   help="number of label columns at the end of an ARFF file")
    s.add_argument("--json", help="write the alerts as JSON here")
    s.add_argument("--kind", choices=["multilabel", "graph", "table"],
                   help="what the file holds (default: guessed from its name)")
    s.add_argument("--label", help="a table's binary label column")
    s.add_argument("--features", help="node-feature file of a graph")
    s.add_argument("--classes", help="node-class file of a graph")
    s.add_argument("--no-label-errors", action="store_true",
                   help="skip the search for likely label errors (it trains the default "
                        "classifier 5 times: the slowest check)")
    split_args(s)
    s.set_defaults(func=cmd_health)


def _load(args):
    from featagg_core import data as d
    from featagg_core.cli.triage import user_terms
    path = args.data
    try:
        return _load_data(path, args.kind, test=args.test, label=args.label,
                          features=args.features, classes=args.classes, xml=args.xml,
                          n_labels=args.label_columns)
    except d.DatasetError as exc:
        msg = user_terms(str(exc))
        if "binarise" in msg or "positive" in msg:
            alert = _numeric_label(path, args.label)
            if alert is not None:
                return _with_threshold(args, alert)
        raise CliError(msg) from None


def _with_threshold(args, alert):
    """(the table read with the first threshold ``alert`` offers, ``alert`` saying so), or
    the alert alone when there is no threshold to use or the table still cannot be read."""
    from featagg_core import data as d
    ths = alert.extra.get("thresholds") or []
    if not ths:
        return alert
    t = float(ths[0])
    try:
        table = _load_data(args.data, "table", label=args.label, threshold=t)
    except (d.DatasetError, CliError):
        return alert
    alert.hint += (f" The other checks here read '{args.label}' >= {t:g} as the positive "
                   f"class.")
    alert.extra["checked_with_threshold"] = t
    return table, alert


def _numeric_label(path: str, label: Optional[str]):
    """The ``numeric_label`` alert of a CSV/TSV/parquet table's label column, or None."""
    if not label or not path.lower().endswith((".csv", ".tsv", ".parquet", ".pq", ".csv.gz",
                                               ".tsv.gz")):
        return None
    import pandas as pd
    from featagg_core.health.table import numeric_label_alert
    try:
        if path.lower().endswith((".parquet", ".pq")):
            col = pd.read_parquet(path, columns=[label])[label]
        else:
            sep = "\t" if ".tsv" in path.lower() else ","
            col = pd.read_csv(path, sep=sep, usecols=[label], dtype=str)[label]
    except (OSError, ValueError, KeyError, ImportError):
        return None
    return numeric_label_alert(col.to_numpy(dtype=object), label)


def cmd_health(args) -> None:
    """``featagg health DATA``: print the data-health alerts, most serious first.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options.

    Returns
    -------
    None
        The alerts are printed as text on stdout (and written as JSON with ``--json``).

    Raises
    ------
    CliError
        For input the command cannot read.
    """
    from featagg_core.health import Alert, alerts_to_json, check, format_alerts
    loaded = _load(args)
    offered = None
    if isinstance(loaded, tuple):           # a numeric label, read with a threshold
        loaded, offered = loaded
    if isinstance(loaded, Alert):
        alerts = [loaded]
        name = os.path.basename(args.data)
    else:
        data = loaded
        name = data.name or os.path.basename(args.data)
        split = None
        explicit = any(getattr(args, k, None) is not None for k in ("test_size", "valid_size",
                                                                     "split_seed"))
        if explicit or data.kind == "table":
            split = _split(args, data)
        _progress(f"checking {name} ({data.kind})")
        try:
            alerts = check(data, split, label_errors=not args.no_label_errors)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if offered is not None:
            from featagg_core.health import sort_alerts
            alerts = sort_alerts(alerts + [offered])
    if args.json:
        from featagg_core.data import _atomic_write
        doc = alerts_to_json(alerts)
        doc["dataset"] = name
        text = json.dumps(doc)
        _atomic_write(args.json, lambda fh: fh.write(text.encode()))
        _progress(f"wrote {args.json}")
    counts = {s: sum(a.severity == s for a in alerts) for s in ("error", "warning", "info")}
    print(f"Data health of {name}: {counts['error']} error(s), {counts['warning']} "
          f"warning(s), {counts['info']} note(s).")
    print(format_alerts(alerts), flush=True)
    return None
