"""Fixtures shared by the whole suite (``tests/e2e`` too, so nothing heavy is imported at
module level here: streamlit and the page helpers load when a fixture is used).

``app_for(page, data=None, *, origin="upload", source_id=None, runs=None, state=None,
timeout=300)`` builds a ``streamlit.testing.v1.AppTest`` of ``pages/<page>.py`` (not run
yet) with the session state the app sets when ``data`` is picked in the sidebar; see
:func:`page_util.app_for`. The other AppTest helpers (``settle``, ``click``, ``carry``,
``ok``, ``runs``) are plain functions in ``tests/page_util.py``; brute-force references
are in ``tests/naive.py``.
"""
import pytest


@pytest.fixture
def app_for():
    """The factory :func:`page_util.app_for`: ``app_for("data", dataset).run()``."""
    from page_util import app_for as factory
    return factory
