"""Start the dashboard at once and compile the numba kernels in the background.

``python -m featagg_app.server.serve [streamlit options]`` (what ``scripts/dashboard.sh`` runs;
the ``featagg-dashboard`` console script, :func:`dashboard`, takes dashboard.sh's options
and passes the same streamlit options):

1. sets the server's defaults (each only when the environment does not say otherwise):
   ``FEATAGG_PARALLEL_KERNELS=0`` when the job runner gives every job one thread (workers
   = cores, the default: a ``prange`` kernel cannot pay there and compiles slower; the
   measurement: benchmarks/results/cold_start.md, "Serial or parallel kernels in the server"),
   with numba's cache in ``.cache/numba-server/`` of the checkout, or
   ``~/.cache/featagg/numba-server/`` for an installed package (numba's cache index does
   not tell the serial and parallel variants apart); glibc's malloc limited to 2 arenas (many session
   threads otherwise each keep their own free pages); Streamlit's ``runner.postScriptGC``
   off (``STREAMLIT_RUNNER_POST_SCRIPT_GC=false``): by default Streamlit runs a full
   ``gc.collect(2)`` after *every* script run, fragment runs included, and on this
   server's heap (numba, scikit-learn, plotly, pandas) each one holds the GIL for a
   noticeable share of the server's busy time while a class's job panels redraw
   (benchmarks/results/dashboard_notes.md). Cyclic
   garbage is still collected by Python's own generational collector, and the session
   reaper runs a full collection when it frees a closed session (where the memory is);
2. starts the server's :class:`featagg_app.server.warmup.KernelWarmup` (``context.kernels()``):
   child processes compile the kernels into numba's on-disk cache in the order pages need
   them while the pages are already served; jobs wait for the kernels they need; once
   they are all ready the server imports the pages' modules and loads the default sample
   (:func:`featagg_app.server.first_visit.warm_server`), so its first visitor does not;
3. hands over to Streamlit's own command line, ``streamlit run app.py [options]``, in the
   same process (``app.py`` of the checkout, or the installed copy in
   ``featagg_app/dashboard/``: :mod:`featagg_app.server.layout`).

The first page is served as soon as Streamlit is up (a few seconds), whatever the state
of numba's cache; ``[featagg] kernels: … ready after … s`` lines in the log say when each
page's kernels are there (``benchmarks/cold_start_bench.py`` measures both).

Where it listens: ``127.0.0.1`` (this machine only) unless ``--server.address`` says
otherwise (``dashboard.sh --public`` passes ``0.0.0.0``: every interface, for a
classroom); :func:`listen_banner` says which at start. The load budget of uploads and
artifact imports defaults to 256 MiB in the server (``FEATAGG_MAX_LOAD_MB``).

Upload sizes: Streamlit's server refuses any upload over ``server.maxUploadSize``, whatever
a widget's own ``max_upload_size`` says, so :func:`main` passes the largest of the
uploaders' caps (:func:`featagg_app.intake.uploads.server_upload_cap_mb`: 200 MB for an artifact
import, ``FEATAGG_MAX_UPLOAD_MB`` or 50 MB for a data file) unless the command line gives
one; each uploader then keeps its own cap in the browser and the page checks it again.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from featagg_app.server.layout import APP, APP_DIR, IN_CHECKOUT

#: the folder holding app.py and pages/ (the checkout's root, or the installed copy)
ROOT = APP_DIR
#: what ``--help`` and the banner call the command that starts the dashboard
LAUNCHER = "bash scripts/dashboard.sh" if IN_CHECKOUT else "featagg-dashboard"


def use_st_navigation_only() -> None:
    """Route every request through ``app.py``'s ``st.navigation``.

    Streamlit treats an app whose main script has a ``pages/`` folder beside it as a v1
    multipage app until some session runs the main script and calls ``st.navigation``
    (``streamlit/commands/navigation.py`` then sets ``PagesManager.uses_pages_directory =
    False``). Until then a first visitor who opens a deep link such as ``/data`` gets
    ``pages/data.py`` run on its own: no Home, no dataset picker, file-name menu entries.
    Our ``pages/`` are only ever reached through ``st.navigation``, so we set that switch
    before the server starts, exactly as Streamlit itself does on the first navigation call.
    """
    from streamlit.runtime.pages_manager import PagesManager
    PagesManager.uses_pages_directory = False


def _numba_server_cache() -> Path:
    """numba's cache of the server's (serial) kernel variant: the checkout's ``.cache/``,
    or the user's cache folder for an installed package (site-packages may be read-only)."""
    if IN_CHECKOUT:
        return ROOT / ".cache" / "numba-server"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "featagg" / "numba-server"


def server_defaults(environ=None) -> dict:
    """Set the environment defaults :func:`main` needs (see the module docstring).

    Must run before numba is imported; a variable already set is never changed.

    Parameters
    ----------
    environ : dict or None, default=None
        The environment to change; None for ``os.environ``.

    Returns
    -------
    dict
        The variables it set, with their values.
    """
    env = os.environ if environ is None else environ
    set_now = {}

    def default(key, value):
        if key not in env:
            env[key] = set_now[key] = value

    from featagg_app.server.jobs import default_workers       # no numba, no streamlit session
    if default_workers() >= (os.cpu_count() or 1):
        default("FEATAGG_PARALLEL_KERNELS", "0")
    if env.get("FEATAGG_PARALLEL_KERNELS", "1").strip() == "0":
        default("NUMBA_CACHE_DIR", str(_numba_server_cache()))
    default("MALLOC_ARENA_MAX", "2")
    default("STREAMLIT_RUNNER_POST_SCRIPT_GC", "false")
    return set_now


def _option(argv, name: str):
    """Value of a ``--name value`` / ``--name=value`` streamlit option in ``argv``."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def listen_banner(argv) -> str:
    """One line saying where the server listens and who can reach it.

    Parameters
    ----------
    argv : list of str
        The streamlit options the server starts with (``--server.address``,
        ``--server.port``).

    Returns
    -------
    str
        The banner, starting with ``[featagg]``.
    """
    address = (_option(argv, "--server.address")
               or os.environ.get("STREAMLIT_SERVER_ADDRESS") or "127.0.0.1")
    port = _option(argv, "--server.port") or "8501"
    if address in ("0.0.0.0", "::", ""):
        return (f"[featagg] PUBLIC: listening on every network interface, port {port}: anyone "
                f"who can reach this machine can open http://<this machine>:{port} and "
                f"upload files")
    return (f"[featagg] listening on http://{address}:{port} only (this machine); "
            f"{LAUNCHER} --public to serve a classroom")


def main(argv=None) -> None:
    """Start the server: defaults, background kernel compilation, then ``streamlit run``.

    Parameters
    ----------
    argv : list of str or None, default=None
        Streamlit's options (``--server.port 8501`` …); None for ``sys.argv[1:]``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # localhost unless told otherwise (streamlit's own default is every interface); a
    # command-line --server.address wins over this environment default
    os.environ.setdefault("STREAMLIT_SERVER_ADDRESS", "127.0.0.1")
    os.environ.setdefault("FEATAGG_MAX_LOAD_MB", "256")
    print(listen_banner(argv), file=sys.stderr, flush=True)
    server_defaults()
    from featagg_app.server.memory import limit_malloc_arenas
    limit_malloc_arenas(int(os.environ.get("MALLOC_ARENA_MAX", "2") or 2))
    from featagg_app.server import context
    if context.kernel_warmup_enabled():
        # background compilation starts now, not at the 1st visit; once it is over, the
        # server imports the pages and loads the default sample (first_visit.py)
        from featagg_app.server.first_visit import warm_server
        warmup = context.kernels()
        if warmup is not None:
            warmup.then(warm_server)
    use_st_navigation_only()
    argv = with_upload_cap(argv)
    from streamlit.web import cli
    cli.main(["run", str(APP), *argv], prog_name="streamlit")


def with_upload_cap(argv: list) -> list:
    """``argv`` with ``--server.maxUploadSize`` set to the uploaders' largest cap when it
    does not give one (see the module docstring); an explicit option is left as it is."""
    if any(a == "--server.maxUploadSize" or a.startswith("--server.maxUploadSize=")
           for a in argv):
        return list(argv)
    from featagg_app.intake.uploads import server_upload_cap_mb
    return [*argv, "--server.maxUploadSize", str(server_upload_cap_mb())]


# ------------------------------------------------------------ the featagg-dashboard command
#: streamlit options the dashboard always runs with (scripts/dashboard.sh passes the same;
#: toolbarMode is .streamlit/config.toml's, which Streamlit reads only from the current
#: folder, so an installed dashboard started elsewhere gets it here)
DASHBOARD_OPTIONS = ("--server.headless", "true", "--browser.gatherUsageStats", "false",
                     "--server.fileWatcherType", "none", "--client.showErrorDetails", "none",
                     "--client.toolbarMode", "viewer")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be a whole number in [1, 65535], "
                                         f"got {text!r}")
    return port


def _mib(text: str) -> str:
    try:
        ok = float(text) > 0
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"--max-load-mb must be a positive number of MiB, "
                                         f"got {text!r}")
    return text


def dashboard_parser() -> argparse.ArgumentParser:
    """The options of ``featagg-dashboard`` (those of ``scripts/dashboard.sh``).

    Returns
    -------
    argparse.ArgumentParser
        Defaults from the environment as dashboard.sh takes them: ``PORT`` (8501),
        ``FEATAGG_MAX_LOAD_MB`` (256), ``FEATAGG_DATA_DIR`` (none).
    """
    env_port = os.environ.get("PORT", "8501")
    p = argparse.ArgumentParser(
        prog="featagg-dashboard",
        description="Start the featagg dashboard on the bundled sample data (Bibtex is "
                    "loaded when a browser opens it). It serves at once and compiles the "
                    "numba kernels in background processes.")
    p.add_argument("port_arg", nargs="?", type=_port, metavar="PORT",
                   help="port to listen on (the same as --port)")
    p.add_argument("--port", type=_port, default=None,
                   help="port to listen on (default 8501, or $PORT"
                        + (f": {env_port})" if "PORT" in os.environ else ")"))
    p.add_argument("--public", action="store_true",
                   help="listen on every network interface (a classroom: students open "
                        "http://<this machine>:PORT); without it only this machine can "
                        "connect (127.0.0.1)")
    p.add_argument("--max-load-mb", type=_mib, metavar="MB",
                   default=os.environ.get("FEATAGG_MAX_LOAD_MB", "256"),
                   help="the most one upload or artifact import may inflate or allocate for "
                        "declared sizes, in MiB (default %(default)s; FEATAGG_MAX_LOAD_MB)")
    p.add_argument("--data-dir", metavar="DIR", default=os.environ.get("FEATAGG_DATA_DIR"),
                   help="server-side datasets offered in the sidebar (FEATAGG_DATA_DIR)")
    return p


def dashboard_argv(args: argparse.Namespace) -> list:
    """The streamlit options ``featagg-dashboard`` starts the server with.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by :func:`dashboard_parser`.

    Returns
    -------
    list of str
        ``--server.port``, ``--server.address`` (127.0.0.1, or 0.0.0.0 with ``--public``),
        :data:`DASHBOARD_OPTIONS` and ``--server.disconnectedSessionTTL``
        (``FEATAGG_SESSION_TTL_S``, default 60), as ``scripts/dashboard.sh`` passes them.
    """
    port = args.port or args.port_arg or int(os.environ.get("PORT", "8501"))
    return ["--server.port", str(port),
            "--server.address", "0.0.0.0" if args.public else "127.0.0.1",
            *DASHBOARD_OPTIONS,
            "--server.disconnectedSessionTTL", os.environ.get("FEATAGG_SESSION_TTL_S", "60")]


def dashboard(argv=None) -> None:
    """``featagg-dashboard``: start the dashboard with ``scripts/dashboard.sh``'s options.

    Parameters
    ----------
    argv : list of str or None, default=None
        ``[PORT] [--port PORT] [--public] [--max-load-mb MB] [--data-dir DIR]``; None for
        ``sys.argv[1:]``. ``--help`` prints them and exits.
    """
    parser = dashboard_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.port is None and args.port_arg is None:
        try:
            _port(os.environ.get("PORT", "8501"))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"$PORT: {exc}")
    os.environ["FEATAGG_MAX_LOAD_MB"] = args.max_load_mb
    if args.data_dir:
        # relative to where the command was typed (streamlit does not change folder)
        os.environ["FEATAGG_DATA_DIR"] = os.path.abspath(args.data_dir)
    main(dashboard_argv(args))


if __name__ == "__main__":
    main()
