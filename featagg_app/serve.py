"""Start the dashboard with the numba kernels already compiled in the server process.

``python -m featagg_app.serve [streamlit options]`` runs :func:`featagg_app.warmup.warm_up`
in this process first (so every featagg_core kernel is compiled, or loaded from numba's
on-disk cache, before the first browser connects), marks the process as warmed up
(``FEATAGG_WARMED_UP=1``, which ``app.py`` reads to skip its own background warm-up), and
then hands over to Streamlit's own command line: ``streamlit run app.py [options]`` in the
same process, so the sessions import the already-compiled modules. ``scripts/dashboard.sh``
uses it. No streamlit is imported before the warm-up is done.

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

APP = Path(__file__).resolve().parents[1] / "app.py"


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
    from featagg_app.warmup import warm_up
    report = warm_up()
    print(f"[featagg] {report.summary()}", file=sys.stderr, flush=True)
    os.environ["FEATAGG_WARMED_UP"] = "1"
    use_st_navigation_only()
    from streamlit.web import cli
    cli.main(["run", str(APP), *argv], prog_name="streamlit")


if __name__ == "__main__":
    main()
