"""Start the dashboard at once and compile the numba kernels in the background.

``python -m featagg_app.serve [streamlit options]`` (what ``scripts/dashboard.sh`` runs):

1. sets the server's defaults (each only when the environment does not say otherwise):
   ``FEATAGG_PARALLEL_KERNELS=0`` when the job runner gives every job one thread (workers
   = cores, the default: a ``prange`` kernel cannot pay there and compiles 2-4x slower),
   with numba's cache in ``.cache/numba-server/`` (numba's cache index does not tell the
   serial and parallel variants apart); glibc's malloc limited to 2 arenas (many session
   threads otherwise each keep their own free pages);
2. starts the server's :class:`featagg_app.warmup.KernelWarmup` (``jobs.kernels()``):
   child processes compile the kernels into numba's on-disk cache in the order pages need
   them while the pages are already served; jobs wait for the kernels they need;
3. hands over to Streamlit's own command line, ``streamlit run app.py [options]``, in the
   same process.

The first page is served as soon as Streamlit is up (a few seconds), whatever the state
of numba's cache; ``[featagg] kernels: … ready after … s`` lines in the log say when each
page's kernels are there (``benchmarks/cold_start_bench.py`` measures both).

Where it listens: ``127.0.0.1`` (this machine only) unless ``--server.address`` says
otherwise (``dashboard.sh --public`` passes ``0.0.0.0``: every interface, for a
classroom); :func:`listen_banner` says which at start. The load budget of uploads and
artifact imports defaults to 256 MiB in the server (``FEATAGG_MAX_LOAD_MB``).
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


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


def server_defaults(environ=None) -> dict:
    """The environment defaults :func:`main` sets (see the module docstring); returns the
    ones it set. Must run before numba is imported."""
    env = os.environ if environ is None else environ
    set_now = {}

    def default(key, value):
        if key not in env:
            env[key] = set_now[key] = value

    from featagg_app.jobs import default_workers       # no numba, no streamlit session
    if default_workers() >= (os.cpu_count() or 1):
        default("FEATAGG_PARALLEL_KERNELS", "0")
    if env.get("FEATAGG_PARALLEL_KERNELS", "1").strip() == "0":
        default("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba-server"))
    default("MALLOC_ARENA_MAX", "2")
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
    """One line saying where the server listens and who can reach it."""
    address = (_option(argv, "--server.address")
               or os.environ.get("STREAMLIT_SERVER_ADDRESS") or "127.0.0.1")
    port = _option(argv, "--server.port") or "8501"
    if address in ("0.0.0.0", "::", ""):
        return (f"[featagg] PUBLIC: listening on every network interface, port {port}: anyone "
                f"who can reach this machine can open http://<this machine>:{port} and "
                f"upload files")
    return (f"[featagg] listening on http://{address}:{port} only (this machine); "
            f"bash scripts/dashboard.sh --public to serve a classroom")


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # localhost unless told otherwise (streamlit's own default is every interface); a
    # command-line --server.address wins over this environment default
    os.environ.setdefault("STREAMLIT_SERVER_ADDRESS", "127.0.0.1")
    os.environ.setdefault("FEATAGG_MAX_LOAD_MB", "256")
    print(listen_banner(argv), file=sys.stderr, flush=True)
    server_defaults()
    from featagg_app.memory import limit_malloc_arenas
    limit_malloc_arenas(int(os.environ.get("MALLOC_ARENA_MAX", "2") or 2))
    from featagg_app import jobs
    if jobs.kernel_warmup_enabled():
        jobs.kernels()              # background compilation starts now, not at the 1st visit
    use_st_navigation_only()
    from streamlit.web import cli
    cli.main(["run", str(APP), *argv], prog_name="streamlit")


if __name__ == "__main__":
    main()
