"""End-to-end: a person picks Cora, opens Graph features, runs BMGUFS with two candidate
block models, reads the cards, sees the block-model charts, the top features by word name,
compares with the baselines (ACC/NMI chart), and finds the run on the Compare page."""
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, open_sample_page, page_text,
                      server_log_tail, set_number, tall_screenshot)

SCREENSHOT_DIR = "/tmp"


@pytest.mark.e2e
def test_bmgufs_on_cora(app_server, page):
    main = open_sample_page(page, app_server, "Cora", "Graph features")
    text = page_text(page)
    assert "How it works" in text and "Graph feature selection" in text, \
        server_log_tail(app_server)
    set_number(main, "Candidate block models", 2, page)
    set_number(main, "Iterations", 60, page)
    set_number(main, "d (features to keep)", 16, page)
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

    tall_screenshot(page, f"{SCREENSHOT_DIR}/featagg_graph_features_cora.png", height=4200,
                    settle_ms=1000)

    goto_page(page, "Compare")
    assert "#1 BMGUFS d=16" in page_text(page), server_log_tail(app_server)
