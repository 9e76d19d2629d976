"""End-to-end: a person picks Bibtex, opens Extreme classification, trains one KTXMLC tree,
reads P@1 and the metrics table, sees the head-to-tail chart and the label-tree sunburst
with Bibtex's tag names, and finds the run on the Compare page."""
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, open_sample_page, page_text,
                      server_log_tail, set_number, tall_screenshot)
from featagg_core.data.samples import load_sample

SCREENSHOT_DIR = "/tmp"


@pytest.mark.e2e
def test_train_ktxmlc_on_bibtex(app_server, page):
    bib = load_sample("bibtex")
    main = open_sample_page(page, app_server, "Bibtex", "Extreme classification")
    assert "How it works" in page_text(page), server_log_tail(app_server)
    set_number(main, "Trees", 1, page)
    click_and_wait(page, "Train", timeout_ms=300_000)
    cards = metric_cards(page, timeout_ms=240_000)
    p1 = float(cards["P@1"].rstrip("%"))
    assert p1 > 55.0, (cards, server_log_tail(app_server))
    text = page_text(page)
    assert "Metrics on the test split" in text and "Label tree" in text
    assert "Traceback" not in page.content()
    plots = main.locator(".js-plotly-plot")
    plots.first.wait_for(state="visible")
    assert plots.count() >= 2                      # buckets + sunburst
    sunburst = plots.nth(plots.count() - 1)
    # on Bibtex the flat model wins KTXMLC's choice on the held-out training rows: the
    # chart, its caption and the choice's own section say so
    assert "One flat tree: all 159 labels under the root" in sunburst.inner_text()
    assert "KTXMLC kept one flat tree (one-vs-all); What KTXMLC chose above says why" in text
    assert "It chose one flat model" in text
    # some Bibtex tag name appears as a sector
    sb_text = sunburst.inner_text()
    assert any(name in sb_text for name in bib.label_names[:159]), sb_text[:500]
    tall_screenshot(page, f"{SCREENSHOT_DIR}/featagg_xmlc_bibtex.png")

    goto_page(page, "Compare")
    assert "#1 KTXMLC K=16 T=1" in page_text(page), server_log_tail(app_server)
