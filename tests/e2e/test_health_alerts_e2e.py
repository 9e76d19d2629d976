"""End-to-end: Bibtex's data-health alerts (30 test rows that (near-)copy a training row,
rows repeated, conflicting labels) are the first thing the Data page and the Triage page
show, most serious first; after a triage the page opens with the recommendation, and the
downloaded HTML report, opened offline, shows the same recommendation and alerts."""
import json

import pytest

from e2e_util import (click_and_wait, goto_page, open_sample_page, page_text,
                      server_log_tail, tall_screenshot, wait_for_app)

_SEVERITY = {"error": 0, "warning": 1, "info": 2}


def _alert_titles(main):
    """The health expanders' titles in page order ("error · …")."""
    titles = [" ".join(w for w in t.split() if not w.startswith("keyboard_arrow_"))
              for t in main.locator('[data-testid="stExpander"] summary').all_inner_texts()]
    return [t for t in titles if t.split(" ", 1)[0] in _SEVERITY and " · " in t]


def _check_alerts(main, text):
    titles = _alert_titles(main)
    sev = [t.split(" ", 1)[0] for t in titles]
    assert sev and sev[0] == "error", titles
    assert sev == sorted(sev, key=_SEVERITY.get), titles
    assert any("test rows" in t and "training row" in t for t in titles), titles
    # the alerts are in the health section (the recommendation may quote the first one)
    first = titles[0].split(" · ", 1)[1][:20]
    assert text.find(first, text.index("Data health")) > 0
    return titles


@pytest.mark.e2e
def test_alerts_on_data_and_triage_pages_and_in_the_offline_report(app_server, page,
                                                                   browser, tmp_path):
    main = open_sample_page(page, app_server, "Bibtex", "Data")
    main.get_by_text("Data health").first.wait_for(timeout=120_000)
    # the alerts come first, so they can be drawn before the cards below them
    main.locator('[data-testid="stMetricLabel"]').filter(
        has_text="Points n (train)").first.wait_for(timeout=120_000)
    wait_for_app(page)
    text = page_text(page)
    titles = _check_alerts(main, text)
    assert text.index("Data health") < text.index("Points n (train)"), text[:400]
    tall_screenshot(page, "/tmp/featagg_data_health.png", height=1600)

    goto_page(page, "Triage")
    main.get_by_text("Data health").first.wait_for(timeout=120_000)
    assert _alert_titles(main)[:len(titles)] == titles     # the same alerts, same order
    click_and_wait(page, "Run the triage", timeout_ms=400_000)
    text = page_text(page)
    assert "Recommendation" in text and "Verdict" in text, server_log_tail(app_server)
    assert text.index("Recommendation") < text.index("Data health") < text.index("Verdict")
    _check_alerts(main, text)
    tall_screenshot(page, "/tmp/featagg_triage_health.png", height=1800)

    with page.expect_download() as dl:
        main.get_by_role("button", name="Download the report (HTML)").click()
    html_path = tmp_path / "report.html"
    dl.value.save_as(html_path)
    with page.expect_download() as dl:
        main.get_by_role("button", name="Download every number (JSON)").click()
    json_path = tmp_path / "report.json"
    dl.value.save_as(json_path)
    record = json.loads(json_path.read_text(encoding="utf-8"))
    alerts = record["health"]["alerts"]
    assert alerts and alerts[0]["severity"] == "error"
    assert record["recommendation"]["text"].split(":")[0] in text

    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        "file://") else route.abort())
    try:
        report = context.new_page()
        report.goto(html_path.as_uri())
        shown = report.evaluate("""() => [...document.querySelectorAll('tr[data-alert]')].map(
            r => [r.dataset.alert, r.querySelector('span.num').dataset.value])""")
        headings = report.evaluate("() => [...document.querySelectorAll('h2')].map(h => "
                                   "h.textContent)")
        rec = report.locator("p.recommendation").inner_text()
        report.screenshot(path="/tmp/featagg_report_health.png")
    finally:
        context.close()
    assert shown == [[a["type"], repr(a["count"])] for a in alerts]
    assert headings[:3] == ["Recommendation", "Data health", "Verdict"]
    assert rec == record["recommendation"]["text"]
