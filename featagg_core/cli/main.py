"""Command line: the same runs as the dashboard's pages, without a browser.

    python -m featagg_core info DATA
    python -m featagg_core agglomerate DATA --d0 8 --out defrag.fgz
    python -m featagg_core train TRAIN --test TEST --defrag 8 --refrag --out model.fgz
    python -m featagg_core predict MODEL DATA --k 5 --out scores.txt
    python -m featagg_core evaluate MODEL DATA
    python -m featagg_core select-features GRAPH --d 64 --out bmgufs.fgz
    python -m featagg_core compress TABLE --label income --budget 100 --out mapping.json
    python -m featagg_core triage DATA --out report.html --json report.json --budget-s 120
    python -m featagg_core health DATA --test TEST --json alerts.json

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
import signal
import sys
import threading
import time
from typing import List, Optional

from featagg_core.cli.command import CliError, Interrupted, _check_paths
from featagg_core.cli.parser import build

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The ``featagg`` argument parser: one subcommand per ``cmd_*`` function.

    Returns
    -------
    argparse.ArgumentParser
        The parser (errors are reported as one line, exit status 2).
    """
    return build()


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
    started = time.monotonic()            # triage --budget-s counts from here
    parser = build_parser()
    _one_line_errors(parser)
    args = parser.parse_args(argv)
    from featagg_core.artifacts.registry import ArtifactError
    from featagg_core.data import DatasetError
    args.cancel = threading.Event()
    args.started = started
    previous = _install_ctrl_c(args.cancel)
    try:
        _check_paths(args)
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
    except RecursionError:
        print("featagg: error: the input nests too deeply to be read", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback (unless debugging)
        if os.environ.get("FEATAGG_DEBUG"):
            import traceback
            traceback.print_exc()
        # the library's words, never its class name (BadZipFile means nothing to a user)
        message = " ".join(str(exc).split())[:300] or "an unexpected internal error"
        print(f"featagg: error: {args.command} failed ({message}; FEATAGG_DEBUG=1 shows "
              "the details)", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if result is None:                    # the command printed its own text (health)
        return 0
    try:
        json.dump(result, sys.stdout, indent=1,
                  default=lambda o: o.item() if hasattr(o, "item") else str(o))
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (``featagg info ... | head -c1``): end quietly; stdout is
        # pointed at /dev/null so the interpreter's own flush at exit does not complain
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 0
