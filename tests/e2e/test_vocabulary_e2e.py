"""End-to-end: a person opens Vocabulary compression on the Amazon employee access sample,
compresses every column, reads the cards, sees the MI-loss curves, the sorted P(C=0|x)
picture with its split points and the allocation, downloads the mapping, finds the runs on
the Compare page; and compresses a CSV of their own uploaded in the sidebar."""
import json
import re

import numpy as np
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, open_sample_page, page_text,
                      server_log_tail, sidebar, tall_screenshot, upload_file, wait_for_app)

SCREENSHOT_DIR = "/tmp"


@pytest.mark.e2e
def test_vocabulary_compression_on_amazon(app_server, page, tmp_path):
    main = open_sample_page(page, app_server, "Amazon", "Vocabulary compression")
    text = page_text(page)
    assert "How it works" in text and "Vocabulary compression" in text, server_log_tail(app_server)
    click_and_wait(page, "Compress", timeout_ms=300_000)      # the methods, then the curves
    # the MI-loss curves are a job of their own, next to the methods' one
    main.locator(".js-plotly-plot").filter(has_text="MI loss versus budget").first.wait_for(
        state="visible", timeout=240_000)
    main.get_by_text("Per-column budget allocation").first.wait_for(timeout=60_000)
    cards = metric_cards(page, timeout_ms=240_000)
    loss = [v for k, v in cards.items() if k.startswith("MI loss")]
    assert loss and 0.0 <= float(loss[0].rstrip("%")) < 100.0, cards
    text = page_text(page)
    assert "Sorted P(C = 0 | x) and the split points" in text
    assert "Per-column budget allocation" in text
    assert "Traceback" not in page.content()
    plots = main.locator(".js-plotly-plot")
    assert plots.count() >= 4, plots.count()          # curves, time, picture, allocation

    with page.expect_download() as dl:
        main.get_by_role("button", name="Mapping (JSON, all columns)").click()
    path = tmp_path / "mapping.json"
    dl.value.save_as(path)
    doc = json.loads(path.read_text())
    assert doc["method"] == "submodular" and "RESOURCE" in doc["columns"]
    # the global scheme shares m x columns buckets (the greedy merge may give RESOURCE
    # more than m of them): the columns together use at most that many
    # the page starts at the budget that compresses (experiment.default_budget), not 10
    from featagg_core.experiment import default_budget, make_split
    from featagg_core.data.samples import load_sample
    amazon = load_sample("amazon_employee_access")
    m = default_budget(amazon, make_split(amazon))[0]
    used = [len(set(c["buckets"])) for c in doc["columns"].values()]
    assert sum(used) <= m * len(used) and max(doc["columns"]["RESOURCE"]["buckets"]) < sum(used)

    tall_screenshot(page, f"{SCREENSHOT_DIR}/featagg_vocabulary_amazon.png", height=3600, settle_ms=1000)

    goto_page(page, "Compare")
    assert f"Vocabulary submodular m={m}" in page_text(page), server_log_tail(app_server)


@pytest.mark.e2e
def test_vocabulary_compression_of_an_uploaded_csv(app_server, page, tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    site = rng.integers(0, 40, n)
    click = (rng.random(n) < np.where(site < 10, 0.8, 0.1)).astype(int)
    csv = tmp_path / "clicks.csv"
    csv.write_text("site,device,click\n" + "".join(
        f"s{s},d{rng.integers(0, 3)},{c}\n" for s, c in zip(site, click)))
    page.goto(app_server)
    wait_for_app(page)
    goto_page(page, "Vocabulary compression")
    sb = sidebar(page)
    sb.get_by_text("Upload a file", exact=True).click()
    wait_for_app(page)
    sb.get_by_text("Table", exact=True).click()
    wait_for_app(page)
    upload_file(page, csv)
    sb.locator('[data-testid="stAlert"]').filter(has_text="Loaded").wait_for()
    wait_for_app(page)
    assert "clicks.csv — table, 600 rows × 2 columns" in page_text(page), server_log_tail(app_server)
    click_and_wait(page, "Compress", timeout_ms=300_000)
    try:
        cards = metric_cards(page, timeout_ms=240_000)
    except Exception:
        page.screenshot(path=f"{SCREENSHOT_DIR}/featagg_vocabulary_upload_failed.png",
                        full_page=True)
        raise
    # two site groups explain the clicks: on the training rows it was fitted on, the site
    # column's 10 buckets keep nearly everything (the picture's caption)
    m = re.search(r"on the training rows I\(Z;C\) = ([0-9.]+) of I\(X;C\) = ([0-9.]+) nats",
                  page_text(page))
    assert m and float(m.group(1)) >= 0.95 * float(m.group(2)), page_text(page)[-1500:]
    # on the 120 held-out rows the plug-in I(X;C) of 40 site values is inflated by noise,
    # so the MI loss there is larger, but far from everything is lost
    loss = [v for k, v in cards.items() if k.startswith("MI loss")][0]
    assert float(loss.rstrip("%")) < 50.0, cards
    assert "Traceback" not in page.content()
