"""End-to-end: durable sessions (issue 31, item 1). The page URL carries the session's key
(``?session=KEY``) on every page; a reload mid-job and after a finished run brings back the
dataset, the runs, the triage report and the large-text setting, and the job goes on (the
same job: its elapsed time keeps counting) and finishes once; a second browser with a
made-up key gets a fresh session that shows nothing of the first; multi-label → graph →
multi-label keeps the upload, and so does a reload."""
import re
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, page_text, server_log_tail,
                      sidebar, upload_file, wait_for_app, wait_for_jobs)
from featagg_app.server.sessions import looks_like_key, new_key

JOB_TIMEOUT_MS = 300_000
_RUNNING = re.compile(r"Triage of \S+ — running for (\d+) s")


def _key(page):
    return (parse_qs(urlparse(page.url).query).get("session") or [None])[0]


def _root_px(page) -> str:
    return page.evaluate("getComputedStyle(document.documentElement).fontSize")


def _large_text_on(page):
    return sidebar(page).get_by_role("switch", name="Large text (projector)").is_checked()


def _reload(page):
    page.reload()
    wait_for_app(page, start_ms=5_000)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stMain\"] [data-stale=\"true\"]')"
        ".length === 0", timeout=90_000)


def _elapsed(page, timeout_s: float = 240.0) -> int:
    """Seconds the triage job's panel says it has been running (waits until it runs)."""
    deadline = page.evaluate("Date.now()") + timeout_s * 1000
    while page.evaluate("Date.now()") < deadline:
        m = _RUNNING.search(page_text(page))
        if m:
            return int(m.group(1))
        page.wait_for_timeout(500)
    raise AssertionError("the triage job never showed as running:\n" + page_text(page))


def _xc_file(path, seed=5, n=300, d=200, L=5):
    rng = np.random.default_rng(seed)
    lines = [f"{n} {d} {L}"]
    for _ in range(n):
        labels = sorted(set(rng.integers(0, L, 2).tolist()))
        feats = sorted(set(rng.integers(0, d, 10).tolist()))
        lines.append(",".join(map(str, labels)) + " "
                     + " ".join(f"{f}:{rng.random():.3f}" for f in feats))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.e2e
def test_reload_mid_job_and_after_a_run_brings_everything_back(app_server, browser,
                                                              tmp_path):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(90_000)
    page = ctx.new_page()
    try:
        page.goto(app_server)
        wait_for_app(page)
        key = _key(page)
        assert looks_like_key(key), page.url
        sidebar(page).get_by_text("Large text (projector)").click()
        wait_for_app(page)
        page.wait_for_function("getComputedStyle(document.documentElement).fontSize "
                               "=== '21px'", timeout=30_000)

        # a finished run: DEFRAG on Bibtex (the default sample)
        goto_page(page, "Feature agglomeration")
        assert _key(page) == key, "the page change dropped ?session="
        click_and_wait(page, "Run", timeout_ms=JOB_TIMEOUT_MS)
        cards = metric_cards(page)
        assert cards.get("Clusters K") == "256", server_log_tail(app_server)

        # a job running: the triage (30 s budget), and a reload in the middle of it
        goto_page(page, "Triage")
        assert _key(page) == key
        slider = page.locator('[data-testid="stMain"] [data-testid="stSlider"]').filter(
            has_text="Time budget").get_by_role("slider")
        slider.focus()
        slider.press("ArrowLeft")                                # 60 s -> 30 s
        wait_for_app(page)
        page.locator('[data-testid="stMain"]').get_by_role(
            "button", name="Run the triage").click()
        before = _elapsed(page)
        while before < 3:
            page.wait_for_timeout(1000)
            before = _elapsed(page)
        _reload(page)
        assert _key(page) == key and page.url.rstrip("/").split("?")[0].endswith("triage")
        page.screenshot(path=str(tmp_path / "reload_mid_job.png"), full_page=True)
        after = _elapsed(page)
        assert after >= before, (before, after)                 # the same job, still going
        assert _root_px(page) == "21px" and _large_text_on(page)
        wait_for_jobs(page, timeout_ms=JOB_TIMEOUT_MS)
        page.get_by_text("Verdict").first.wait_for(timeout=JOB_TIMEOUT_MS)
        text = page_text(page)
        assert "was cancelled" not in text, text
        assert "Bibtex" in text

        # after the finished runs: a reload brings back the report, the runs, the setting
        _reload(page)
        assert _key(page) == key
        page.get_by_text("Verdict").first.wait_for()
        thumb = page.locator('[data-testid="stMain"] [data-testid="stSlider"]').filter(
            has_text="Time budget").locator('[data-testid="stSliderThumbValue"]')
        assert thumb.inner_text().strip() == "30 s"               # the page's own widget
        goto_page(page, "Feature agglomeration")
        assert metric_cards(page).get("Clusters K") == "256"
        _reload(page)
        assert metric_cards(page).get("Clusters K") == "256"
        assert _root_px(page) == "21px"
        page.screenshot(path=str(tmp_path / "reload_after_run.png"), full_page=True)
        goto_page(page, "Compare")
        text = page_text(page)
        assert "No runs yet" not in text, text
        # the triage finished once: its runs are listed once each (a second run of the job
        # would list every name twice), after DEFRAG's #1 and its baseline
        titles = re.findall(r"^#(\d+) (.+)$", text, re.M)
        numbers = {}
        for n, name in titles:                   # a title shows in several places
            numbers.setdefault(name, set()).add(n)
        assert titles and all(len(v) == 1 for v in numbers.values()), numbers
        assert re.search(r"^(\d+) runs? · bibtex", text, re.M), text
    finally:
        ctx.close()


@pytest.mark.e2e
def test_uploads_survive_kind_switches_and_reload_and_a_made_up_key_sees_nothing(
        app_server, browser, tmp_path):
    mine = _xc_file(tmp_path / "durable_mine_upload.txt")
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000})
                for _ in range(2)]
    try:
        alice, bob = (c.new_page() for c in contexts)
        alice.goto(app_server)
        wait_for_app(alice)
        key = _key(alice)
        upload_file(alice, mine)
        sb = sidebar(alice)
        sb.get_by_text("In use: durable_mine_upload.txt").first.wait_for()
        # multi-label -> graph -> multi-label: the upload is still there
        sb.get_by_text("Graph", exact=True).first.click()
        wait_for_app(alice)
        sb.get_by_text("Multi-label", exact=True).first.click()
        wait_for_app(alice)
        sb.get_by_text("In use: durable_mine_upload.txt").first.wait_for()
        assert "earlier upload" in sb.inner_text()
        _reload(alice)
        assert _key(alice) == key
        sb = sidebar(alice)
        sb.get_by_text("In use: durable_mine_upload.txt").first.wait_for()
        alice.screenshot(path=str(tmp_path / "reload_upload.png"), full_page=True)
        goto_page(alice, "Data")
        assert metric_cards(alice).get("Points n (train)") is not None
        assert _key(alice) == key

        # a second browser with a made-up key: a fresh session, nothing of Alice's
        guess = new_key()
        bob.goto(f"{app_server}/?session={guess}")
        wait_for_app(bob)
        bob.get_by_text("names a session this server does not have").first.wait_for()
        assert _key(bob) not in (guess, key) and looks_like_key(_key(bob))
        everything = bob.locator("body").inner_text()
        assert "durable_mine" not in everything
        goto_page(bob, "Compare")
        assert "No runs yet" in page_text(bob)
        # and Alice's key in a new tab of her own browser brings her session back
        tab = contexts[0].new_page()
        tab.goto(f"{app_server}/?session={key}")
        wait_for_app(tab)
        sidebar(tab).get_by_text("In use: durable_mine_upload.txt").first.wait_for()
    finally:
        for c in contexts:
            c.close()
