"""Where the dashboard's files are: a checkout, an editable install or an installed wheel.

In the checkout ``app.py`` and ``pages/`` sit at the repository root, beside
``featagg_app/`` (tests, docs and people use those paths; an editable install,
``pip install -e .``, runs them in place). ``pip install .`` ships them inside this package
instead, as ``featagg_app/dashboard/app.py`` and ``featagg_app/dashboard/pages/``
(``pyproject.toml``'s ``package-dir``). Either way ``pages/`` is beside ``app.py``, which
is what ``app.py`` (``ROOT / "pages/…"``), Streamlit's ``st.Page`` / ``st.page_link`` and
:mod:`featagg_app.views.home` rely on.
"""
from __future__ import annotations

from pathlib import Path

#: the ``featagg_app`` package folder (this module is ``featagg_app/server/layout.py``)
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _app_dir() -> Path:
    installed = PACKAGE_DIR / "dashboard"
    if (installed / "app.py").is_file():        # a wheel (the checkout has no such folder)
        return installed
    return PACKAGE_DIR.parent


#: the folder holding ``app.py`` and ``pages/`` (the checkout's root, or the installed copy)
APP_DIR = _app_dir()
#: the dashboard's main script, what ``streamlit run`` is given
APP = APP_DIR / "app.py"
#: True when running from a checkout (or an editable install of one), False from a wheel
IN_CHECKOUT = APP_DIR == PACKAGE_DIR.parent
