"""End-to-end: a person opens Feature agglomeration on Bibtex, runs DEFRAG, reads K and the
error comparison, sees the hierarchy and the size histogram, looks up the cluster of a
word, and downloads the cluster assignment as CSV."""
import csv
import io

import pytest

from e2e_util import (click_and_wait, metric_cards, open_sample_page, page_text, server_log_tail,
                      tall_screenshot, wait_for_app)
from featagg_core.data.samples import load_sample

SCREENSHOT_DIR = "/tmp"


@pytest.mark.e2e
def test_run_defrag_inspect_and_download(app_server, page):
    bib = load_sample("bibtex")
    d = bib.X.shape[1]
    main = open_sample_page(page, app_server, "Bibtex", "Feature agglomeration")
    assert "How it works" in page_text(page), server_log_tail(app_server)

    click_and_wait(page, "Run", timeout_ms=240_000)      # DEFRAG, then its baselines
    cards = metric_cards(page)
    assert cards.get("Clusters K") == "256", (cards, server_log_tail(app_server))
    assert cards.get("Dimensions") == f"{d:,} → 256", cards
    # non-zeros of the test rows (the split's held-out part), before → after
    assert cards.get("Non-zeros (test rows)", "").startswith(
        f"{round(bib.X_test.nnz / 1000)}k → "), cards
    text = page_text(page)
    assert "Split: bibtex's own split" in text
    assert "Clustering error" in main.locator(".js-plotly-plot").first.inner_text()
    assert "random balanced" in text and "k-means (MiniBatchKMeans)" in text
    # error chart, size histogram and the tree are drawn
    plots = main.locator(".js-plotly-plot")
    plots.nth(2).wait_for(state="visible")
    assert plots.count() >= 3
    assert "Hierarchy under the root" in text        # the tree, named by top words
    assert main.locator("g.iciclelayer, .iciclelayer").count() >= 1
    assert "Traceback" not in page.content()

    # cluster inspector: the cluster of a word lists that word
    names = [str(w) for w in bib.feature_names]
    word = next(w for w in ("learning", "network", "protein", names[0]) if w in names)
    box = main.get_by_label("Find the cluster of a feature (name contains…)")
    box.fill(word)
    box.press("Enter")
    wait_for_app(page)
    main.get_by_text(f"{word} → cluster", exact=False).first.wait_for(state="visible")

    tall_screenshot(page, f"{SCREENSHOT_DIR}/featagg_feature_agglomeration.png")

    with page.expect_download() as dl:
        main.get_by_role("button", name="Cluster assignment (CSV)").click()
    path = dl.value.path()
    rows = list(csv.DictReader(io.StringIO(open(path, encoding="utf-8").read())))
    assert len(rows) == d
    assert {int(r["cluster"]) for r in rows} == set(range(256))
    assert rows[0]["name"] == str(bib.feature_names[0])
