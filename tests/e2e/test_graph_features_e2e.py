"""End-to-end: a person picks Cora, opens Graph features, runs BMGUFS with two candidate
block models, reads the cards, sees the block-model charts, the top features by word name,
compares with the baselines (ACC/NMI chart), and finds the run on the Compare page."""
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, page_text, select_sample,
                      server_log_tail, wait_for_app)

SCREENSHOT_DIR = "/tmp"


def _set_number(main, label, value, page):
    box = main.locator('[data-testid="stNumberInput"]').filter(has_text=label).locator("input")
    box.fill(str(value))
    box.press("Enter")
    wait_for_app(page)


@pytest.mark.e2e
def test_bmgufs_on_cora(app_server, page):
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Cora")
    goto_page(page, "Graph features")
    main = page.locator('[data-testid="stMain"]')
    text = page_text(page)
    assert "How it works" in text and "Graph feature selection" in text, \
        server_log_tail(app_server)
    _set_number(main, "Candidate block models", 2, page)
    _set_number(main, "Iterations", 60, page)
    _set_number(main, "d (features to keep)", 16, page)
    click_and_wait(page, "Run BMGUFS", timeout_ms=300_000)
    cards = metric_cards(page, timeout_ms=240_000)
    assert float(cards["RRE of the block model"]) < 1.0, cards
    assert int(cards["Non-zero weights (of 1,433)"].replace(",", "")) <= 1433, cards
    text = page_text(page)
    assert "Block models" in text and "Top 16 features" in text
    assert "Traceback" not in page.content()
    plots = main.locator(".js-plotly-plot")
    plots.first.wait_for(state="visible")
    # RRE bars, M heatmap, P/Q heatmaps, convergence, weights, node drawing
    assert plots.count() >= 6, plots.count()

    click_and_wait(page, "Compare with the baselines", timeout_ms=300_000)
    main.get_by_text("k-means on the selected features vs the node classes").first.wait_for(
        state="visible", timeout=240_000)
    assert "Laplacian score (graph)" in page_text(page)

    page.set_viewport_size({"width": 1400, "height": 4200})
    wait_for_app(page)
    page.wait_for_timeout(1000)
    page.screenshot(path=f"{SCREENSHOT_DIR}/featagg_graph_features_cora.png", full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})

    goto_page(page, "Compare")
    assert "#1 BMGUFS d=16" in page_text(page), server_log_tail(app_server)
