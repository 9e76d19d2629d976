"""End-to-end: a person imports crafted artifacts on the Export page -- a Defrag forged with
every checksum recomputed whose ``n_clusters_`` would make the agglomeration kernel write
out of bounds (it used to kill the shared server, "free(): invalid size"), and a manifest
deflate bomb. Each is refused with a clear message naming what is wrong, no traceback;
the server stays up and a second browser session works normally."""
import copy
import json
import sys
import urllib.request
from pathlib import Path

import pytest

from e2e_util import goto_page, metric_cards, page_text, select_sample, server_log_tail, wait_for_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hostile_corpus as hc  # noqa: E402


def _crafted(tmp_path):
    from featagg_core import Defrag
    from featagg_core.data.samples import load_sample
    from featagg_core.artifacts.store import artifact_bytes
    bib = load_sample("bibtex")
    blob = artifact_bytes(Defrag(d0=8).fit(bib.X, bib.Y))
    members = hc._members(blob)
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    arrays = {i.filename[7:-4]: hc._load_npy(d) for i, d in members
              if i.filename.startswith("arrays/")}
    m = copy.deepcopy(manifest)
    m["meta"]["n_clusters_"] = 1
    forged = tmp_path / "forged.fgz"
    forged.write_bytes(hc._rebuild(m, arrays, forge=True))
    head = json.dumps(manifest).encode()[:-1] + b', "pad": "'
    data, total = hc._deflated_padding(head, 512 << 20, b'"}')
    bomb = tmp_path / "bomb.fgz"
    bomb.write_bytes(hc._raw_deflated_zip(
        [("manifest.json", data, total, None)]
        + [(i.filename, d, len(d), "stored") for i, d in members if i.filename != "manifest.json"]))
    return forged, bomb


def _upload(page, path):
    main = page.locator('[data-testid="stMain"]')
    main.locator('[data-testid="stFileUploader"]').first.locator(
        'input[type="file"]').set_input_files(str(path))
    wait_for_app(page)


@pytest.mark.e2e
def test_crafted_artifacts_are_refused_and_the_server_stays_up(app_server, page, browser,
                                                                tmp_path):
    forged, bomb = _crafted(tmp_path)
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Bibtex")
    goto_page(page, "Export")
    main = page.locator('[data-testid="stMain"]')
    _upload(page, forged)
    main.get_by_text("forged.fgz was refused").first.wait_for(timeout=90_000)
    text = page_text(page)
    assert "n_clusters_" in text or "labels_" in text, text
    assert "Traceback" not in page.content()
    page.screenshot(path="/tmp/featagg_hostile_import.png", full_page=True)

    _upload(page, bomb)
    main.get_by_text("bomb.fgz was refused").first.wait_for(timeout=90_000)
    assert "manifest.json" in page_text(page)
    assert "Traceback" not in page.content()

    # the server survived both and serves a second session
    assert app_server.proc.poll() is None, server_log_tail(app_server)
    with urllib.request.urlopen(app_server + "/_stcore/health", timeout=10) as r:
        assert r.read().strip() == b"ok"
    other = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        p2 = other.new_page()
        p2.goto(app_server)
        wait_for_app(p2)
        select_sample(p2, "Bibtex")
        goto_page(p2, "Data")
        cards = metric_cards(p2)
        assert cards.get("Features d") == "1,836", (cards, server_log_tail(app_server))
    finally:
        other.close()
    assert app_server.proc.poll() is None, server_log_tail(app_server)
    assert "free(): invalid" not in Path(app_server.log).read_text(errors="replace")


@pytest.mark.e2e
def test_an_artifact_over_the_data_upload_cap_reaches_the_import(app_server, page, tmp_path):
    """The Export page promises imports up to 200 MB, above the 50 MB cap of data files.
    Streamlit's server refuses any upload over its ``server.maxUploadSize`` whatever the
    widget says, so with the old server cap of 50 MB a 60 MB artifact never reached the
    page (the widget itself said "50MB per file"). A 60 MB file that is not an artifact
    must now arrive and be refused by featagg's own check, in the page's words."""
    big = tmp_path / "big.fgz"
    big.write_bytes(b"\0" * (60 << 20))
    page.goto(app_server)
    wait_for_app(page)
    select_sample(page, "Bibtex")
    goto_page(page, "Export")
    main = page.locator('[data-testid="stMain"]')
    uploader = main.locator('[data-testid="stFileUploader"]').first
    assert "200MB per file" in uploader.inner_text().replace(" MB", "MB"), uploader.inner_text()
    _upload(page, big)
    main.get_by_text("big.fgz was refused").first.wait_for(timeout=90_000)
    assert "Traceback" not in page.content()
    page.screenshot(path="/tmp/featagg_big_import.png", full_page=True)

    # the data uploader keeps its own, smaller cap: the browser refuses a 60 MB data file
    side = page.locator('[data-testid="stSidebar"]')
    side.get_by_text("Upload a file", exact=True).click()
    wait_for_app(page)
    data = side.locator('[data-testid="stFileUploader"]').filter(has_text="Data file").first
    data.wait_for(state="visible", timeout=90_000)
    assert "50MB per file" in data.inner_text().replace(" MB", "MB"), data.inner_text()
    big_data = tmp_path / "big.npz"
    big_data.write_bytes(b"\0" * (60 << 20))
    data.locator('input[type="file"]').first.set_input_files(str(big_data))
    # Streamlit's own message on the file's chip; the file never leaves the browser
    data.get_by_text("File must be 50.0MB or smaller").wait_for(timeout=30_000)
    page.screenshot(path="/tmp/featagg_big_data.png", full_page=True)
    assert "Traceback" not in page.content()
    assert app_server.proc.poll() is None, server_log_tail(app_server)
