"""Fixtures shared by the whole suite (``tests/e2e`` too, so nothing heavy is imported at
module level here: streamlit and the page helpers load when a fixture is used).

``app_for(page, data=None, *, origin="upload", source_id=None, runs=None, state=None,
timeout=300)`` builds a ``streamlit.testing.v1.AppTest`` of ``pages/<page>.py`` (not run
yet) with the session state the app sets when ``data`` is picked in the sidebar; see
:func:`page_util.app_for`. The other AppTest helpers (``settle``, ``click``, ``carry``,
``ok``, ``runs``) are plain functions in ``tests/page_util.py``; brute-force references
are in ``tests/naive.py``.
"""
import sys

import pytest


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Put ``sys.modules["__main__"]`` back after every test. Streamlit's script runner
    (every AppTest) installs a fake ``__main__`` whose ``__file__`` is the page script and
    never restores it; a later test that spawns processes (a Dask ``LocalCluster`` with
    ``processes=True``) would then have each child re-run that page as its main module,
    and its workers fail to start."""
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


@pytest.fixture
def app_for():
    """The factory :func:`page_util.app_for`: ``app_for("data", dataset).run()``."""
    from page_util import app_for as factory
    return factory
