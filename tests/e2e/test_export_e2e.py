"""End-to-end: a person trains DEFRAG on Bibtex, downloads its pipeline from the Export page,
re-imports the downloaded file and evaluates it; a damaged file is refused with a clear
message; the run and the imported evaluation show up on the Compare page."""
import re

import pytest

from e2e_util import (click_and_wait, goto_page, metric_cards, open_sample_page, page_text,
                      server_log_tail, wait_for_app)
from featagg_core import load_artifact
from featagg_core.artifacts.store import load_bundle
from featagg_core.data.samples import load_sample


def _upload(page, path):
    """Give ``path`` to the Import section's file uploader (its file input, as a file chosen
    in the dialog would; a file already there is replaced)."""
    main = page.locator('[data-testid="stMain"]')
    uploader = main.locator('[data-testid="stFileUploader"]').first
    uploader.locator('input[type="file"]').set_input_files(str(path))
    wait_for_app(page)


@pytest.mark.e2e
def test_export_and_reimport_a_model(app_server, page, tmp_path):
    bib = load_sample("bibtex")
    main = open_sample_page(page, app_server, "Bibtex", "Feature agglomeration")
    click_and_wait(page, "Run", timeout_ms=240_000)
    assert metric_cards(page).get("Clusters K") == "256", server_log_tail(app_server)

    goto_page(page, "Export")
    assert "#1 DEFRAG-XY d0=8" in page_text(page), server_log_tail(app_server)
    card = main.locator('[data-testid="stVerticalBlock"]').filter(
        has_text="#1 DEFRAG-XY d0=8 —").filter(
        has=page.get_by_role("button", name="Artifact (.fgz)")).last
    with page.expect_download() as dl:
        card.get_by_role("button", name="Artifact (.fgz)").click()
    saved = tmp_path / "defrag.fgz"
    dl.value.save_as(saved)
    model = load_artifact(saved)                 # the download is a valid pipeline artifact
    assert model.defrag.n_clusters_ == 256 and model.defrag.labels_.shape == (bib.X.shape[1],)
    with page.expect_download() as dl:
        main.get_by_role("button", name=re.compile("^Bundle of all")).click()
    bundle = tmp_path / "all.fgb"
    dl.value.save_as(bundle)
    objects, info = load_bundle(bundle)
    assert "run01_defrag_xy_d0_8" in objects and len(info["runs"]) == len(objects) >= 1

    # a damaged copy is refused with a clear message, no traceback
    broken = tmp_path / "broken.fgz"
    broken.write_bytes(saved.read_bytes()[:2000])
    _upload(page, broken)
    main.get_by_text("broken.fgz was refused").first.wait_for(timeout=90_000)
    text = page_text(page)
    assert "broken.fgz was refused" in text, text
    assert "Traceback" not in page.content()

    # the real download re-imports (replacing the broken one) and evaluates on Bibtex
    _upload(page, saved)
    main.get_by_text("Loaded 1 object(s)").first.wait_for(timeout=90_000)
    click_and_wait(page, "Evaluate on the current dataset", timeout_ms=120_000)
    main.get_by_text("clustering_error").first.wait_for(timeout=90_000)
    text = page_text(page)
    assert "clustering_error" in text and "256" in text, text
    page.screenshot(path="/tmp/featagg_export.png", full_page=True)

    # both runs (the fit and the imported evaluation) are on the Compare page
    goto_page(page, "Compare")
    text = page_text(page)
    m = re.search(r"(\d+) runs · bibtex", text)
    assert m and int(m.group(1)) >= 2 and "(imported)" in text, text
