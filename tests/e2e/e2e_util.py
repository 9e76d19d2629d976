"""Helpers for the end-to-end tests (see tests/e2e/conftest.py for the fixtures)."""
from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urlparse

RUN_TIMEOUT_MS = 90_000

#: the line featagg_app.server.warmup.KernelWarmup prints once every kernel group is loaded
_KERNELS_READY = re.compile(r"kernels: all \d+ groups ready after")


def server_log_tail(server, n: int = 60) -> str:
    """Last ``n`` lines of the ``app_server``'s output (for assertion messages)."""
    try:
        return "\n".join(Path(server.log).read_text(errors="replace").splitlines()[-n:])
    except (OSError, AttributeError):
        return "(no server log)"


def wait_for_kernels(log_path, timeout_s: float = 900.0, alive=None, poll_s: float = 0.5):
    """Seconds until a server's log says every kernel group is ready ("[featagg] kernels:
    all N groups ready after …": on a cold numba cache background processes compile them
    for minutes), or None when ``timeout_s`` passes first or ``alive()`` turns false (the
    server exited). Each caller decides what a None means (fail, raise, carry on)."""
    t0 = time.monotonic()
    while True:
        try:
            if _KERNELS_READY.search(Path(log_path).read_text(errors="replace")):
                return time.monotonic() - t0
        except OSError:
            pass  # the log is not there yet
        if time.monotonic() - t0 > timeout_s or (alive is not None and not alive()):
            return None
        time.sleep(poll_s)


def wait_for_app(page, timeout_ms: int = RUN_TIMEOUT_MS, start_ms: int = 1_500) -> None:
    """Wait until Streamlit has finished the current script run (best effort).

    Gives a run that an action just triggered ``start_ms`` to start (the app root's
    ``data-test-script-state`` turns "running"), then waits for "notRunning" and for the
    running-status widget to go away. A very quick run can finish before it is seen, and a
    busy server can start late: after an action, also wait for what you expect to see
    (``locator.wait_for()``, ``expect(...)``), as :func:`metric_cards` does.
    """
    app = page.locator('[data-testid="stApp"]')
    app.wait_for(state="attached", timeout=timeout_ms)
    try:
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="running"]',
                               state="attached", timeout=start_ms)
    except Exception:  # noqa: BLE001 - the run may have finished already (or not needed)
        pass
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                           state="attached", timeout=timeout_ms)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached",
                           timeout=timeout_ms)


def goto_page(page, title: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Click the sidebar navigation link whose text is ``title``, wait until the browser is on
    that page's URL and the run it triggers is over, and the page's content replaced the
    old page's (no stale elements left)."""
    link = page.locator('[data-testid="stSidebarNavLink"]').filter(has_text=title).first
    href = link.get_attribute("href", timeout=timeout_ms) or ""
    link.click(timeout=timeout_ms)
    if href:      # the URL's query (?session=KEY, the durable session) stays: paths only
        path = urlparse(href).path.rstrip("/").rsplit("/", 1)[-1]

        def on_page(url: str) -> bool:
            here = urlparse(url).path.rstrip("/")
            # Home's link is the root ("/"): its path is empty once the "/" is stripped
            return here.endswith("/" + path) if path else here == ""

        page.wait_for_url(on_page, timeout=timeout_ms)
    wait_for_app(page, timeout_ms, start_ms=5_000)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stMain\"] [data-stale=\"true\"]')"
        ".length === 0", timeout=timeout_ms)


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


def upload_file(page, path, label: str = "Data file", timeout_ms: int = RUN_TIMEOUT_MS,
                within=None) -> None:
    """Give ``path`` to the file uploader whose label is ``label`` and wait for the run.

    By default the uploader is the sidebar's (it opens "Upload a file" first); pass
    ``within`` (a locator, e.g. ``page.locator('[data-testid="stMain"]')``) for a page's
    own uploader. The file goes through the real file chooser when the uploader is empty;
    when it already holds a file (a file chip is shown), it replaces it through the
    uploader's file input, as dropping a file on it would.
    """
    if within is None:
        within = sidebar(page)
        within.get_by_text("Upload a file", exact=True).click()
        wait_for_app(page, timeout_ms)
    uploader = within.locator('[data-testid="stFileUploader"]').filter(has_text=label).first
    uploader.wait_for(state="visible", timeout=timeout_ms)
    if uploader.locator('[data-testid="stFileChip"]').count() == 0:
        with page.expect_file_chooser(timeout=timeout_ms) as fc:
            uploader.locator('[data-testid="stFileUploaderDropzone"] button').first.click()
        fc.value.set_files(str(path))
    else:
        uploader.locator('input[type="file"]').first.set_input_files(str(path))
    wait_for_app(page, timeout_ms)


def metric_cards(page, timeout_ms: int = RUN_TIMEOUT_MS) -> dict:
    """``{label: value}`` of every ``st.metric`` card in the main area (waits until at
    least one is shown)."""
    page.locator('[data-testid="stMain"] [data-testid="stMetric"]').first.wait_for(
        state="visible", timeout=timeout_ms)
    out = {}
    for card in page.locator('[data-testid="stMain"] [data-testid="stMetric"]').all():
        label = card.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        out[label] = card.locator('[data-testid="stMetricValue"]').inner_text().strip()
    return out


_CANCEL_SHOWN = ("() => [...document.querySelectorAll('[data-testid=\"stMain\"] button')]"
                 ".some(b => b.innerText.trim() === 'Cancel')")


def wait_for_jobs(page, timeout_ms: int = RUN_TIMEOUT_MS, start_ms: int = 3_000) -> None:
    """After a click that queues a job: wait for its panel (a **Cancel** button) to appear
    — a short job may be over before it is seen — then for every job panel of the page to
    go, and for the page's run that shows the result."""
    try:
        page.wait_for_function(_CANCEL_SHOWN, timeout=start_ms)
    except Exception:  # noqa: BLE001 - already finished (or not started yet: waited below)
        pass
    page.wait_for_function(f"() => !({_CANCEL_SHOWN[6:]})", timeout=timeout_ms)
    wait_for_app(page, timeout_ms)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stMain\"] [data-stale=\"true\"]')"
        ".length === 0", timeout=timeout_ms)


def click_and_wait(page, name: str, timeout_ms: int = RUN_TIMEOUT_MS, exact: bool = True):
    """Click the main area's button ``name`` and wait for the jobs it starts."""
    page.locator('[data-testid="stMain"]').get_by_role("button", name=name,
                                                        exact=exact).first.click()
    wait_for_jobs(page, timeout_ms)


def set_number(container, label: str, value, page) -> None:
    """Type ``value`` into the number input labelled ``label`` inside ``container`` (the
    main area or the sidebar), press Enter and wait for the script run."""
    box = container.locator('[data-testid="stNumberInput"]').filter(has_text=label).locator("input")
    box.fill(str(value))
    box.press("Enter")
    wait_for_app(page)


def tall_screenshot(page, path, height: int = 2600, settle_ms: int = 800) -> None:
    """A full-page screenshot taken at a ``height``-pixel viewport (so the charts below the
    fold are drawn), then back to 1400 x 1000."""
    page.set_viewport_size({"width": 1400, "height": height})
    wait_for_app(page)
    page.wait_for_timeout(settle_ms)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def open_sample_page(page, server, sample: str, title: str):
    """Open the dashboard at ``server``, pick the bundled sample ``sample`` and go to the
    page ``title``; returns the main area's locator."""
    page.goto(server)
    wait_for_app(page)
    select_sample(page, sample)
    goto_page(page, title)
    return page.locator('[data-testid="stMain"]')
