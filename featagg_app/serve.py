"""Start the dashboard with the numba kernels already compiled in the server process.

``python -m featagg_app.serve [streamlit options]`` runs :func:`featagg_app.warmup.warm_up`
in this process first (so every featagg_core kernel is compiled, or loaded from numba's
on-disk cache, before the first browser connects), marks the process as warmed up
(``FEATAGG_WARMED_UP=1``, which ``app.py`` reads to skip its own background warm-up), and
then hands over to Streamlit's own command line: ``streamlit run app.py [options]`` in the
same process, so the sessions import the already-compiled modules. ``scripts/dashboard.sh``
uses it. No streamlit is imported before the warm-up is done.
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


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from featagg_app.warmup import warm_up
    report = warm_up()
    print(f"[featagg] {report.summary()}", file=sys.stderr, flush=True)
    os.environ["FEATAGG_WARMED_UP"] = "1"
    use_st_navigation_only()
    from streamlit.web import cli
    cli.main(["run", str(APP), *argv], prog_name="streamlit")


if __name__ == "__main__":
    main()
