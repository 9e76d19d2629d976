"""End-to-end: a person trains DEFRAG on Bibtex, downloads the model from the Export page,
re-imports the downloaded file and evaluates it; a damaged file is refused with a clear
message; the run shows up on the Compare page."""
import re

import pytest

from e2e_util import goto_page, metric_cards, page_text, select_sample, server_log_tail, wait_for_app
from featagg_core import load_artifact
from featagg_core.artifacts import load_bundle
from featagg_core.samples import load_sample


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
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Bibtex")
    goto_page(page, "Feature agglomeration")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Run", exact=True).click()
    wait_for_app(page, start_ms=5_000)
    assert metric_cards(page).get("Clusters K") == "256", server_log_tail(app_server)

    goto_page(page, "Export")
    assert "defrag" in page_text(page), server_log_tail(app_server)
    with page.expect_download() as dl:
        main.get_by_role("button", name="Artifact (.fgz)").first.click()
    saved = tmp_path / "defrag.fgz"
    dl.value.save_as(saved)
    model = load_artifact(saved)                 # the download is a valid artifact
    assert model.n_clusters_ == 256 and model.labels_.shape == (bib.X.shape[1],)
    with page.expect_download() as dl:
        main.get_by_role("button", name=re.compile("^Bundle of all")).click()
    bundle = tmp_path / "all.fgb"
    dl.value.save_as(bundle)
    objects, info = load_bundle(bundle)
    assert list(objects) == ["defrag"] and len(info["runs"]) >= 1

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
    main.get_by_role("button", name="Evaluate on the current dataset").click()
    main.get_by_text("clustering error").first.wait_for(timeout=90_000)
    text = page_text(page)
    assert "clustering error" in text and "256" in text, text
    page.screenshot(path="/tmp/featagg_export.png", full_page=True)

    # both runs (the fit and the imported evaluation) are on the Compare page
    goto_page(page, "Compare")
    m = re.search(r"(\d+) of (\d+) runs", page_text(page))
    assert m and int(m.group(1)) >= 2, page_text(page)
