"""Helpers for the end-to-end tests (see tests/e2e/conftest.py for the fixtures)."""
from __future__ import annotations

from pathlib import Path

RUN_TIMEOUT_MS = 90_000


def server_log_tail(server, n: int = 60) -> str:
    """Last ``n`` lines of the ``app_server``'s output (for assertion messages)."""
    try:
        return "\n".join(Path(server.log).read_text(errors="replace").splitlines()[-n:])
    except (OSError, AttributeError):
        return "(no server log)"




def wait_for_app(page, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until Streamlit has finished the current script run.

    Gives a run that an action just triggered a moment to start (the app root's
    ``data-test-script-state`` turns "running"), then waits for "notRunning" and for the
    running-status widget to go away.
    """
    app = page.locator('[data-testid="stApp"]')
    app.wait_for(state="attached", timeout=timeout_ms)
    try:
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="running"]',
                               state="attached", timeout=1_500)
    except Exception:  # noqa: BLE001 - the run may have finished already (or not needed)
        pass
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                           state="attached", timeout=timeout_ms)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached",
                           timeout=timeout_ms)


def goto_page(page, title: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Click the sidebar navigation link whose text is ``title`` and wait for the run."""
    link = page.locator('[data-testid="stSidebarNavLink"]').filter(has_text=title).first
    link.click(timeout=timeout_ms)
    wait_for_app(page, timeout_ms)


def sidebar(page):
    """The sidebar locator."""
    return page.locator('[data-testid="stSidebar"]')


def select_sample(page, title: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Pick the bundled sample whose option text contains ``title`` (e.g. "Bibtex") in the
    sidebar dataset picker and wait for the run."""
    sb = sidebar(page)
    sb.get_by_text("Bundled sample", exact=True).click()
    wait_for_app(page, timeout_ms)
    sb.locator('[data-testid="stSelectbox"]').filter(has_text="Sample dataset").click()
    page.get_by_role("option").filter(has_text=title).first.click(timeout=timeout_ms)
    wait_for_app(page, timeout_ms)


def page_text(page) -> str:
    """All visible text of the main area (for assertions)."""
    return page.locator('[data-testid="stMain"]').inner_text()


def upload_file(page, path, label: str = "Data file", timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Open "Upload a file" in the sidebar and give ``path`` to the file uploader whose label
    is ``label`` (through the real file chooser), then wait for the run."""
    sb = sidebar(page)
    sb.get_by_text("Upload a file", exact=True).click()
    wait_for_app(page, timeout_ms)
    uploader = sb.locator('[data-testid="stFileUploader"]').filter(has_text=label).first
    with page.expect_file_chooser(timeout=timeout_ms) as fc:
        uploader.locator('[data-testid="stFileUploaderDropzone"] button').first.click()
    fc.value.set_files(str(path))
    wait_for_app(page, timeout_ms)
