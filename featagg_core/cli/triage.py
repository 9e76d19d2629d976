"""The ``triage`` command of ``python -m featagg_core`` (registered by :mod:`featagg_core.cli.parser`).

    python -m featagg_core triage DATA --out report.html [--json report.json] [--budget-s 120]

DATA is any file the readers take (or ``sample:NAME``); options say what a file cannot:
``--test FILE`` (a multi-label test part), ``--labels-xml FILE`` / ``--label-columns N``
(which ARFF columns are labels), ``--label COLUMN`` (a table's binary label),
``--features`` / ``--classes`` (a graph's node files). Messages speak in these options,
never in the library's keyword arguments (:func:`user_terms`). The budget covers the whole
command, from the start of the process to the report on disk.
"""
from __future__ import annotations

import re
import time
from typing import Any, Dict

from featagg_core.cli.command import CliError, Interrupted, _progress, _split
from featagg_core.cli.command import _load as _load_data

__all__ = ["add_parser", "cmd_triage", "user_terms"]

#: seconds kept for rendering and writing the report (plotly.js alone is ~5 MB)
WRITE_RESERVE_S = 4.0

_TERMS = [
    (r"pass xml= \(MULAN label file\) or n_labels= \(the last attributes\)",
     "give --labels-xml FILE (MULAN's label file) or --label-columns N (the last N columns "
     "are the labels)"),
    (r"\bn_labels=(\d+)", r"--label-columns \1"),
    (r"\bn_labels=", "--label-columns "),
    (r"\bxml=", "--labels-xml "),
    (r"the labels file as labels_path=", "the labels file (XC split format) as --test's "
                                         "companion; convert it to one XC file first"),
    (r"\blabels_path= given", "a labels file was given"),
    (r"\bpositive=(?=\S)", "--positive "), (r"\bpositive=", "--positive VALUE"),
    (r"\bthreshold=(?=\S)", "--threshold "), (r"\bthreshold=", "--threshold T"),
    (r"\blabel=\.\.\.", "--label COLUMN"),
    (r"\blabel=", "--label "),
]


def user_terms(message: str) -> str:
    """A reader's message with its Python keyword arguments turned into this command's options.

    ``xml=`` -> ``--labels-xml``, ``n_labels=`` -> ``--label-columns`` …

    Parameters
    ----------
    message : str
        The message.

    Returns
    -------
    str
        The message in the command's terms.
    """
    out = str(message)
    for pat, rep in _TERMS:
        out = re.sub(pat, rep, out)
    return out


def add_parser(sub, split_args, common) -> None:
    """Register ``triage``.

    Parameters
    ----------
    sub : argparse subparsers action
        Where to add the subcommand.
    split_args : callable
        Adds the shared split options to a parser.
    common : callable
        Adds the shared ``--seed`` option.
    """
    s = sub.add_parser("triage", help="quick dataset triage: a bounded battery of experiments "
                                      "and a self-contained HTML report (plus its JSON)")
    s.add_argument("data", help="dataset file or sample:NAME (multi-label, graph or table)")
    s.add_argument("--out", required=True, help="write the HTML report here")
    s.add_argument("--json", help="also write every number of the report as JSON here")
    s.add_argument("--budget-s", type=float, default=120.0,
                   help="seconds the whole command may take (default 120)")
    s.add_argument("--kind", choices=["multilabel", "graph", "table"],
                   help="what the file holds (default: guessed from its name)")
    s.add_argument("--test", help="a multi-label dataset's test part (same format)")
    s.add_argument("--labels-xml", help="MULAN's label file of an ARFF dataset")
    s.add_argument("--label-columns", type=int,
                   help="number of label columns at the end of an ARFF file")
    s.add_argument("--label", help="a table's binary label column")
    binarise = s.add_mutually_exclusive_group()
    binarise.add_argument("--positive", metavar="VALUE",
                          help="a table's label value that is the positive class")
    binarise.add_argument("--threshold", metavar="T", type=float,
                          help="a table's numeric label: rows with label >= T are positive")
    s.add_argument("--features", help="node-feature file of a graph")
    s.add_argument("--classes", help="node-class file of a graph")
    s.add_argument("--replay", help="a triage JSON of the same data: run its plan again "
                                    "(same split and seeds, no time cuts)")
    split_args(s)
    common(s)
    s.set_defaults(func=cmd_triage)


def _load(args):
    from featagg_core import data as d
    try:
        return _load_data(args.data, args.kind, test=args.test, label=args.label,
                          features=args.features, classes=args.classes,
                          positive=args.positive, threshold=args.threshold,
                          xml=args.labels_xml, n_labels=args.label_columns)
    except d.DatasetError as exc:
        raise CliError(user_terms(str(exc))) from None


def _alert_lines(record) -> list:
    """The health alerts of a triage record for the command's output, most serious first:
    severity, type, count, message, hint and a few examples (the full row lists are in
    ``--json``); a one-item list saying why when the checks did not run."""
    from featagg_core.triage.report import alert_examples
    h = record.get("health") or {}
    if h.get("alerts") is None:
        return [{"severity": "info", "type": "not_checked", "message": h.get("why", "")}]
    return [{k: a.get(k) for k in ("severity", "type", "count", "message", "hint")}
            | {"examples": alert_examples(a)} for a in h["alerts"]]


def cmd_triage(args) -> Dict[str, Any]:
    """``featagg triage DATA``: the triage battery within ``--budget-s`` seconds.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options.

    Returns
    -------
    dict
        The files written (``report``, ``json``), the status, dataset name and fingerprint,
        the split, the recommendation, the health alerts (most serious first, a few
        examples each), the verdict, seconds and budget, and every step's title, status,
        estimate and seconds.

    Raises
    ------
    CliError
        For input the command cannot use, or a budget too small for the loading done.
    """
    _T0 = getattr(args, "started", None) or time.monotonic()
    from featagg_core.triage.report import write_report
    from featagg_core.triage.battery import run_triage
    data = _load(args)
    replay = None
    if args.replay:
        import json
        try:
            with open(args.replay, encoding="utf-8") as fh:
                replay = json.load(fh)
        except (OSError, ValueError) as exc:
            raise CliError(f"{args.replay}: not a readable triage JSON ({exc})") from None
    split = None
    if any(getattr(args, k, None) is not None for k in ("test_size", "valid_size",
                                                        "split_seed")):
        split = _split(args, data)
    if args.budget_s <= 0:
        raise CliError("--budget-s must be a positive number of seconds")
    # writing the report, and stopping a step at its deadline, take longer on a busy
    # machine: a fixed reserve plus 3 % of the budget
    left = args.budget_s - (time.monotonic() - _T0) - WRITE_RESERVE_S - 0.03 * args.budget_s
    if left < 2:
        raise CliError(f"--budget-s {args.budget_s:g}: reading the data already took "
                       f"{time.monotonic() - _T0:.0f} s; give a larger budget")
    last = {"msg": None}

    def progress(fraction, message):
        head = message.split(":")[0]
        if head != last["msg"]:
            last["msg"] = head
            _progress(f"{100 * fraction:3.0f} % {message}")

    import shlex
    source = " ".join([shlex.quote(args.data)] + [
        f"{flag} {shlex.quote(str(getattr(args, attr)))}"
        for flag, attr in (("--test", "test"), ("--labels-xml", "labels_xml"),
                           ("--label-columns", "label_columns"), ("--label", "label"),
                           ("--positive", "positive"), ("--threshold", "threshold"),
                           ("--features", "features"), ("--classes", "classes"),
                           ("--kind", "kind"))
        if getattr(args, attr, None) is not None])
    try:
        rep = run_triage(data, budget_s=left, split=split, seed=args.seed, progress=progress,
                         cancel=args.cancel, replay=replay, source=source)
    except ValueError as exc:
        raise CliError(user_terms(str(exc))) from None
    if args.cancel.is_set():
        raise Interrupted()
    paths = write_report(rep.record, args.out, args.json)
    rec = rep.record
    return {"report": paths.get("html"), "json": paths.get("json"), "status": rec["status"],
            "dataset": rec["dataset"]["name"], "fingerprint": rec["dataset"]["fingerprint"],
            "split": rec["split"]["description"],
            "recommendation": (rec.get("recommendation") or {}).get("text", ""),
            "alerts": _alert_lines(rec),
            "verdict": rec["verdict"],
            "seconds": round(time.monotonic() - _T0, 1), "budget_s": args.budget_s,
            "steps": [{k: s.get(k) for k in ("title", "status", "estimate_s", "seconds")}
                      for s in rec["budget"]["steps"]]}
