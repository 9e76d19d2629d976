"""End-to-end: one server, two people. Two browser sessions at the same time each keep
their own dataset and their own runs (a class shares one dashboard)."""
import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, page_text, select_sample,
                      server_log_tail, wait_for_app)
from featagg_core.data.samples import load_sample


@pytest.mark.e2e
def test_two_sessions_keep_their_own_dataset_and_runs(app_server, browser):
    bib, cora = load_sample("bibtex"), load_sample("cora")
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        alice, bob = (c.new_page() for c in contexts)
        for pg in (alice, bob):
            pg.goto(app_server)
            wait_for_app(pg)
        select_sample(alice, "Bibtex")
        select_sample(bob, "Cora")
        goto_page(alice, "Data")
        goto_page(bob, "Data")
        assert metric_cards(alice).get("Points n (train)") == f"{bib.X.shape[0]:,}", \
            server_log_tail(app_server)
        assert metric_cards(bob).get("Nodes") == f"{cora.A.shape[0]:,}"

        # Alice runs DEFRAG; Bob's Compare page stays empty, hers lists the run
        goto_page(alice, "Feature agglomeration")
        click_and_wait(alice, "Run", timeout_ms=240_000)
        assert metric_cards(alice).get("Clusters K") == "256"
        goto_page(bob, "Compare")
        assert "No runs yet" in page_text(bob)
        goto_page(alice, "Compare")
        assert "1 run · bibtex" in page_text(alice)              # her DEFRAG run
        assert "#1 DEFRAG-XY d0=8" in page_text(alice)

        # and Bob's dataset is still Cora after all that
        goto_page(bob, "Data")
        assert metric_cards(bob).get("Nodes") == f"{cora.A.shape[0]:,}"
    finally:
        for c in contexts:
            c.close()
