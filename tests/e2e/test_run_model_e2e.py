"""End-to-end: the run model as a person uses it, in a real browser.

Bibtex → DEFRAG → KTXMLC on raw features → KTXMLC on DEFRAG features → Rare labels uses
the DEFRAG-based classifier by default and names it → REFRAG and FIAT → Compare shows both
classifier runs side by side with deltas → Export bundles both pipelines, REFRAG and FIAT →
re-importing the DEFRAG+KTXMLC pipeline evaluates it on the current dataset (raw features
in: no "fitted on 256 features; the dataset has 1,836")."""
import re

import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, page_text, select_sample,
                      server_log_tail, set_number, tall_screenshot, wait_for_app)
from featagg_core.artifacts.store import load_bundle
from featagg_core import load_artifact

SHOTS = "/tmp"
RAW, DEFRAG = "KTXMLC K=16 T=1", "KTXMLC K=16 T=1 · DEFRAG d0=8"
#: what a fitted run's name adds after its settings (" → one flat tree", " → label trees,
#: C=0.25": KTXMLC's form="auto" chooses on the data), up to a re-ranker or imputer
FIT_CHOICE = r"(?: → [^+—]*?)?"


def _spec_name(name: str) -> str:
    """A run's name without what the fit chose (the part the test sets itself)."""
    return re.sub(r" → [^+]*?(?= \+ |$)", "", name)


def _shot(page, name, height=2600):
    tall_screenshot(page, f"{SHOTS}/featagg_{name}.png", height=height)


@pytest.mark.e2e
def test_runs_flow_from_defrag_to_export(app_server, page, tmp_path):
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Bibtex")
    main = page.locator('[data-testid="stMain"]')

    # 1. DEFRAG on the training rows of Bibtex's own split
    goto_page(page, "Feature agglomeration")
    assert "Split: bibtex's own split" in page_text(page), server_log_tail(app_server)
    click_and_wait(page, "Run", timeout_ms=240_000)
    assert metric_cards(page).get("Clusters K") == "256", server_log_tail(app_server)
    _shot(page, "run_model_1_defrag")

    # 2. KTXMLC on raw features, then on the DEFRAG features of run #1
    goto_page(page, "Extreme classification")
    set_number(main, "Trees", 1, page)
    click_and_wait(page, "Train", timeout_ms=300_000)
    p1_raw = float(metric_cards(page)["P@1"].rstrip("%"))
    assert p1_raw > 55.0, server_log_tail(app_server)
    main.get_by_text("agglomerated (DEFRAG)", exact=True).click()
    wait_for_app(page)
    main.get_by_text("Using the DEFRAG clustering of #1 DEFRAG-XY d0=8").first.wait_for()
    click_and_wait(page, "Train", timeout_ms=300_000)
    text = page_text(page)
    assert re.search(rf"Using #\d+ {re.escape(DEFRAG)}", text), text[:3000]
    _shot(page, "run_model_2_xmlc_defrag")

    # 3. Rare labels: the latest classifier (on DEFRAG features), named, nothing trained
    goto_page(page, "Rare labels")
    text = page_text(page)
    assert re.search(rf"Re-ranking and imputing for #\d+ {re.escape(DEFRAG)}", text), text[:3000]
    assert "trained on this page" not in text
    click_and_wait(page, "Re-rank with REFRAG", timeout_ms=240_000)
    cards = metric_cards(page)
    assert 15.0 < float(re.sub(r"[^0-9.]", "", cards["P@5 with REFRAG"])) < 40.0, cards
    main.get_by_text(re.compile(r"Coverage@5 (doubles|does not double)")).first.wait_for(
        timeout=180_000)                                 # the α curve (its own job)
    _shot(page, "run_model_3_refrag")
    main.get_by_role("tab", name="FIAT: missing features").click()
    wait_for_app(page)
    click_and_wait(page, "Impute with FIAT", timeout_ms=240_000)
    main.get_by_text("P@1 erased + FIAT").first.wait_for(timeout=120_000)
    _shot(page, "run_model_4_fiat", 2200)

    # 4. Compare: both classifier runs side by side, deltas against the raw one
    goto_page(page, "Compare")
    table = main.locator('[data-testid="stTable"]').first
    table.wait_for()
    rows = table.inner_text()
    assert RAW in rows and DEFRAG in rows, rows
    assert "baseline" in rows and re.search(r"[+-]\d+\.\d\d pt", rows), rows
    assert "Quality (percent)" in main.locator(".js-plotly-plot").first.inner_text()
    _shot(page, "run_model_5_compare")

    # 5. Export: every pipeline in one bundle; the DEFRAG+KTXMLC one re-imported
    goto_page(page, "Export")
    with page.expect_download() as dl:
        main.get_by_role("button", name=re.compile("^Bundle of all")).click()
    bundle = tmp_path / "all.fgb"
    dl.value.save_as(bundle)
    objects, info = load_bundle(bundle)
    names = [r["name"] for r in info["runs"]]
    assert RAW in map(_spec_name, names) and DEFRAG in map(_spec_name, names), names
    assert any("REFRAG" in n for n in names) and any("FIAT" in n for n in names), names
    pipes = list(objects.values())
    assert sum(p.kind == "classifier" and p.reranker is None and p.imputer is None
               for p in pipes) == 2
    assert any(p.reranker is not None for p in pipes) and any(p.imputer is not None
                                                              for p in pipes)
    key = next(k for k in objects if "ktxmlc_k_16_t_1_defrag_d0_8" in k
               and "refrag" not in k and "fiat" not in k)
    # the innermost block holding this run's title and an artifact button: its card
    card = main.locator('[data-testid="stVerticalBlock"]').filter(
        has_text=re.compile(rf"#\d+ {re.escape(DEFRAG)}{FIT_CHOICE} —")).filter(
        has=page.get_by_role("button", name="Artifact (.fgz)")).last
    with page.expect_download() as dl:                                  # plain export too
        card.get_by_role("button", name="Feature clusters (CSV)").click()
    assert dl.value.suggested_filename == f"{key}_clusters.csv"
    with page.expect_download() as dl:
        card.get_by_role("button", name="Artifact (.fgz)").click()
    saved = tmp_path / "defrag_ktxmlc.fgz"
    dl.value.save_as(saved)
    pipe = load_artifact(saved)
    assert pipe.n_features_in_ == 1836 and pipe.defrag is not None
    main.locator('[data-testid="stFileUploader"]').first.locator(
        'input[type="file"]').set_input_files(str(saved))
    wait_for_app(page)
    main.get_by_text("Loaded 1 object(s)").first.wait_for(timeout=90_000)
    click_and_wait(page, "Evaluate on the current dataset", timeout_ms=120_000)
    main.get_by_text("Evaluated as").first.wait_for(timeout=60_000)
    text = page_text(page)
    assert "fitted on 256 features" not in text and "P@1" in text, text[-2000:]
    assert "Traceback" not in page.content()
    _shot(page, "run_model_6_export", 3000)
