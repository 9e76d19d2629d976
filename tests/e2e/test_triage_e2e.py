"""End-to-end: a person picks Bibtex, runs the Triage page, downloads the HTML report and
its JSON; the HTML opens offline in chromium (every request but file:// is blocked and
none is even attempted), every chart is drawn, and every number in it equals the JSON's."""
import json

import pytest

from e2e_util import (click_and_wait, goto_page, page_text, select_sample, server_log_tail,
                      wait_for_app)

_NUMBERS = """() => [...document.querySelectorAll('span.num')].map(
    s => [s.dataset.path, s.dataset.value, s.textContent])"""
#: per chart: plotly drew it (its div has the figure's traces) and every trace is in the SVG
_DRAWN = """() => [...document.querySelectorAll('div.fig')].map(f => {
    const el = f.querySelector('.js-plotly-plot');
    return el !== null && el._fullData !== undefined && el._fullData.length > 0 &&
        f.querySelectorAll('.main-svg .trace').length >= el._fullData.length; })"""


def _resolve(record, path):
    node = record
    for part in path.split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


@pytest.mark.e2e
def test_triage_report_downloads_and_opens_offline(app_server, page, browser, tmp_path):
    from featagg_core.triage.report import format_value
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Bibtex")
    goto_page(page, "Triage")
    click_and_wait(page, "Run the triage", timeout_ms=400_000)
    text = page_text(page)
    assert "Verdict" in text and "Labels in the tail are" in text, server_log_tail(app_server)
    page.screenshot(path="/tmp/featagg_triage_page.png", full_page=True)
    main = page.locator('[data-testid="stMain"]')
    with page.expect_download() as dl:
        main.get_by_role("button", name="Download the report (HTML)").click()
    html_path = tmp_path / "report.html"
    dl.value.save_as(html_path)
    with page.expect_download() as dl:
        main.get_by_role("button", name="Download every number (JSON)").click()
    json_path = tmp_path / "report.json"
    dl.value.save_as(json_path)
    record = json.loads(json_path.read_text(encoding="utf-8"))
    assert record["dataset"]["name"].lower().startswith("bibtex")
    # the verdict on the page is the report's
    assert record["verdict"][0] in page_text(page)

    # open the downloaded file offline: nothing but file:// may load
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    attempted = []

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    try:
        report = context.new_page()
        report.goto(html_path.as_uri())
        report.wait_for_function(
            "() => [...document.querySelectorAll('div.fig')].every("
            "f => f.querySelector('.js-plotly-plot .main-svg') !== null)", timeout=60_000)
        drawn = report.evaluate(_DRAWN)
        assert drawn and all(drawn), drawn
        n_figs = len(drawn)
        assert n_figs >= 3                               # label shape, d0 curve, REFRAG...
        numbers = report.evaluate(_NUMBERS)
        report.screenshot(path="/tmp/featagg_triage_report.png", full_page=True)
    finally:
        context.close()
    assert attempted == [], attempted
    assert len(numbers) > 50
    for path, value, shown in numbers:
        v = _resolve(record, path)
        assert repr(v) == value, path
        assert shown == format_value(path.rsplit("/", 1)[-1], v), path
    tradeoff = next(e for e in record["experiments"] if e["kind"] == "defrag_tradeoff")
    assert any(r["d0"] is None for r in tradeoff["tables"]["rows"])
    assert any(r["d0"] is not None for r in tradeoff["tables"]["rows"])
