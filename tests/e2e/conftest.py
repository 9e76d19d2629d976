"""Fixtures for end-to-end tests: the real dashboard in headless Debian chromium.

Use::

    import pytest
    from e2e_util import goto_page, page_text, select_sample, wait_for_app

    @pytest.mark.e2e
    def test_my_page(app_server, page):
        page.goto(app_server)
        wait_for_app(page)
        goto_page(page, "Feature agglomeration")
        page.get_by_role("button", name="Run").click()
        wait_for_app(page)
        assert page.locator(".js-plotly-plot").count() >= 1

``app_server`` (session scope) starts ``streamlit run app.py`` once on a free port and stops
it after the session; ``browser`` (session scope) is one chromium; ``page`` (per test) is a
fresh browser context, so every test gets its own Streamlit session. The server's output is
in ``app_server.log`` (a path printed on failure) — see :func:`server_log_tail`.

A module's own server (other environment or launcher): ``yield from serving(log, ...)``
in its fixture (:func:`serving`). Helpers (waiting for a script run, clicking a page in the
sidebar, picking a sample, opening a sample's page, setting a number input, a tall
screenshot, uploading a file) are in ``tests/e2e/e2e_util.py``; this folder is on
``sys.path`` while pytest runs these tests, so ``from e2e_util import ...`` works.

If ``/usr/bin/chromium`` is missing the e2e tests are skipped, except under ``CI=true``
where they fail (``bash scripts/test.sh`` installs chromium with apt-get when it can).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from e2e_util import server_log_tail  # noqa: F401 - re-exported

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage"]
START_TIMEOUT_S = 120
RUN_TIMEOUT_MS = 90_000  # per action

#: streamlit options for test servers (same as scripts/dashboard.sh and .streamlit/config.toml;
#: the upload cap is left to featagg_app.server.serve, or to config.toml under ``streamlit run``)
SERVER_FLAGS = ["--server.headless", "true", "--browser.gatherUsageStats", "false",
                "--server.fileWatcherType", "none", "--client.showErrorDetails", "none",
                "--server.address", "127.0.0.1"]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


class AppServer(str):
    """The base URL (a ``str``: ``page.goto(app_server)`` works) plus ``.log`` and ``.proc``."""
    log: Path
    proc: subprocess.Popen


def start_server(log_path: Path, script: str = "app.py", extra_env: dict | None = None,
                 launcher: str = "streamlit", timeout_s: float = START_TIMEOUT_S):
    """Start ``streamlit run script`` (``launcher="streamlit"``) or the production launcher
    ``python -m featagg_app.server.serve`` that ``scripts/dashboard.sh`` uses (``launcher="serve"``:
    warm-up first, so allow a longer ``timeout_s`` on a cold numba cache) on a free port;
    returns (AppServer, Popen). The caller must stop it with :func:`stop_server`."""
    port = _free_port()
    if launcher == "serve":
        cmd = [_python(), "-m", "featagg_app.server.serve", "--server.port", str(port), *SERVER_FLAGS]
    else:
        cmd = [_python(), "-m", "streamlit", "run", script, "--server.port", str(port),
               *SERVER_FLAGS]
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")
    env.pop("FEATAGG_WARMUP", None)        # the real server warms up, as in production
    env.update(extra_env or {})
    logf = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=logf, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    logf.close()
    url = f"http://127.0.0.1:{port}"
    server = AppServer(url)
    server.log, server.proc = log_path, proc
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode} before it was "
                               f"up:\n{server_log_tail(server)}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200 and r.read().strip() == b"ok":
                    return server, proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"streamlit did not answer /_stcore/health within "
                               f"{timeout_s} s:\n{server_log_tail(server)}")
        time.sleep(0.5)


def stop_server(proc: subprocess.Popen) -> None:
    """Stop the server's process group (SIGTERM, then SIGKILL after 10 s)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def serving(log_path: Path, **start_kw):
    """For a fixture: ``yield from serving(log, ...)`` starts a server (the arguments of
    :func:`start_server`), yields it and stops it afterwards; a server that does not start
    fails the test with its reason."""
    try:
        server, proc = start_server(log_path, **start_kw)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """Base URL of a dashboard started for this test session (see module docstring)."""
    yield from serving(tmp_path_factory.mktemp("app_server") / "streamlit.log")


@pytest.fixture(scope="session")
def browser():
    """One headless Debian chromium for the test session (playwright)."""
    if not os.path.exists(CHROMIUM):
        msg = f"{CHROMIUM} is missing (apt-get install chromium); the e2e tests need it"
        if _in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    """A fresh browser context and page (its own Streamlit session), 1400×1000."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(RUN_TIMEOUT_MS)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()
