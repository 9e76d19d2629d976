"""End-to-end: a person opens the dashboard, picks Bibtex, reads its statistics and the
label power law on the Data page, then uploads a malformed file and sees a clear error."""
import re

import pytest

from e2e_util import (goto_page, metric_cards, page_text, select_sample, server_log_tail, sidebar,
                      upload_file, wait_for_app)
from featagg_core.data.samples import load_sample

SCREENSHOT_DIR = "/tmp"


@pytest.mark.e2e
def test_pick_bibtex_see_stats_then_bad_upload(app_server, page, tmp_path):
    bib = load_sample("bibtex")
    n, d, L = bib.X.shape[0], bib.X.shape[1], bib.Y.shape[1]
    page.goto(app_server)
    wait_for_app(page)
    assert "featagg" in page_text(page), server_log_tail(app_server)

    select_sample(page, "Bibtex")
    goto_page(page, "Data")
    main = page.locator('[data-testid="stMain"]')
    text = page_text(page)
    cards = metric_cards(page)
    assert cards.get("Points n (train)") == f"{n:,}", cards
    assert cards.get("Features d") == f"{d:,}", cards
    assert cards.get("Labels L") == f"{L:,}", cards
    # the label-frequency plot is drawn (plotly renders into .js-plotly-plot)
    plot = main.locator(".js-plotly-plot").first
    plot.wait_for(state="visible")
    assert main.locator(".js-plotly-plot").count() >= 3
    assert "Label frequency" in main.locator(".js-plotly-plot").first.inner_text()
    assert "Most frequent labels" in text
    page.set_viewport_size({"width": 1400, "height": 2300})   # the whole page in one shot
    wait_for_app(page)
    page.wait_for_timeout(500)
    page.screenshot(path=f"{SCREENSHOT_DIR}/featagg_data_bibtex.png")
    page.set_viewport_size({"width": 1400, "height": 1000})

    bad = tmp_path / "broken.txt"
    bad.write_bytes(b"2 4 2\n0 0:1 9:1\n1 1:1\n")    # feature index 9 with d = 4
    upload_file(page, bad)
    alert = sidebar(page).locator('[data-testid="stAlert"]').filter(
        has_text="Could not load this file")
    alert.wait_for(state="visible")
    msg = alert.inner_text()
    assert "broken.txt" in msg and re.search(r"out of range|index", msg), msg
    assert "Traceback" not in page.content()
    # the page still shows the previous dataset (Bibtex), not a broken state
    assert metric_cards(page).get("Points n (train)") == f"{n:,}"
    page.screenshot(path=f"{SCREENSHOT_DIR}/featagg_data_bad_upload.png")

    # replacing the bad file by a good one clears the error and loads it
    good = tmp_path / "tiny.txt"
    good.write_bytes(b"3 5 2\n0,1 0:1 2:0.5\n1 1:2 4:1\n0 3:1\n")
    upload_file(page, good)
    sidebar(page).locator('[data-testid="stAlert"]').filter(has_text="Loaded").wait_for()
    assert sidebar(page).locator('[data-testid="stAlert"]').filter(
        has_text="Could not load").count() == 0
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stMetricValue\"]')]"
        ".some(e => e.innerText.trim() === '5')")
    assert metric_cards(page)["Points n (train)"] == "3"
