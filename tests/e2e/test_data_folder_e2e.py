"""The server's data folder in a real browser: the sidebar lists its files (and not a
symlink that leads out of it, nor the cache), a file opens and the Data page shows it, the
npz cache written by the first open is reused by a new server process and rebuilt when
the source changes, and an ARFF without its XML asks for the label columns in a widget."""
from __future__ import annotations

import os
import time

import pytest

from conftest import serving, start_server, stop_server
from e2e_util import goto_page, metric_cards, page_text, set_number, sidebar, wait_for_app

pytestmark = pytest.mark.e2e

ARFF = "\n".join(["@relation tiny", "@attribute f0 numeric", "@attribute f1 numeric",
                  "@attribute f2 numeric", "@attribute a {0,1}", "@attribute b {0,1}",
                  "@data"] + [f"{i % 3},{(i * 7) % 5},{i % 2},{i % 2},{(i + 1) % 2}"
                              for i in range(30)]) + "\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    root = tmp_path_factory.mktemp("datafolder")
    (root / "corel5k").mkdir()
    d = make_powerlaw_multilabel(900, 120, 15, random_state=4, test_size=0.2)
    save_xc(d, root / "synth_train.txt")
    save_xc((d.X_test, d.Y_test), root / "synth_test.txt")
    (root / "corel5k" / "train.arff").write_text(ARFF)
    outside = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
    save_xc(d, outside)
    os.symlink(outside, root / "leak.txt")
    return root


def _server_kw(folder) -> dict:
    return {"extra_env": {"FEATAGG_DATA_DIR": str(folder), "FEATAGG_DATA_CACHE_MIN_MB": "0.01"}}


def _server(folder, tmp_path_factory, name):
    log = tmp_path_factory.mktemp(name) / "streamlit.log"
    return start_server(log, **_server_kw(folder))


@pytest.fixture(scope="module")
def folder_server(folder, tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("folder_server") / "streamlit.log",
                       **_server_kw(folder))


def _options(page) -> list:
    sb = sidebar(page)
    sb.get_by_text("Data folder", exact=True).click()
    wait_for_app(page)
    sb.locator('[data-testid="stSelectbox"]').filter(has_text="File in the data folder").click()
    opts = [o.inner_text().strip() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return opts


def _open(page, name: str) -> None:
    sb = sidebar(page)
    sb.locator('[data-testid="stSelectbox"]').filter(has_text="File in the data folder").click()
    page.get_by_role("option").filter(has_text=name).first.click()
    wait_for_app(page)


def _in_use(page, name: str) -> None:
    page.wait_for_function(
        "name => document.querySelector('[data-testid=\"stSidebar\"]').innerText"
        ".includes('In use: ' + name)", arg=name, timeout=90_000)
    wait_for_app(page)


def test_folder_lists_opens_and_caches(folder_server, folder, page, tmp_path_factory):
    page.goto(folder_server)
    wait_for_app(page)
    opts = _options(page)
    names = [o.split(" · ")[0] for o in opts]
    assert names == ["corel5k/train.arff", "synth_test.txt", "synth_train.txt"], opts
    assert not any("leak" in o or ".featagg-cache" in o or str(folder) in o for o in opts)
    assert "(+ test part)" in opts[2]
    _open(page, "synth_train.txt")
    _in_use(page, "synth_train.txt")
    goto_page(page, "Data")
    cards = metric_cards(page)
    assert cards["Points n (train)"] == "720" and cards["Test points"] == "180"
    assert cards["Features d"] == "120"
    assert str(folder) not in page_text(page) + sidebar(page).inner_text()
    cache = folder / ".featagg-cache" / "synth_train.txt.npz"
    assert cache.is_file()
    written = cache.stat().st_mtime_ns

    # a new server process opens it from the cache (not rewritten) ...
    server2, proc2 = _server(folder, tmp_path_factory, "folder_server2")
    try:
        pg2 = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
        pg2.set_default_timeout(90_000)
        p2 = pg2.new_page()
        p2.goto(server2)
        wait_for_app(p2)
        _options(p2)
        _open(p2, "synth_train.txt")
        _in_use(p2, "synth_train.txt")
        assert cache.stat().st_mtime_ns == written
        # ... and rebuilds it once the source changes (a pick stats the file afresh)
        time.sleep(0.05)
        os.utime(folder / "synth_train.txt")
        _open(p2, "synth_test.txt")
        _in_use(p2, "synth_test.txt")
        _open(p2, "synth_train.txt")
        _in_use(p2, "synth_train.txt")
        assert cache.stat().st_mtime_ns != written
        pg2.close()
    finally:
        stop_server(proc2)


def test_folder_arff_without_xml_asks_for_label_columns(folder_server, page):
    page.goto(folder_server)
    wait_for_app(page)
    _options(page)
    _open(page, "corel5k/train.arff")
    sb = sidebar(page)
    sb.get_by_text("Number of label columns at the end", exact=True).wait_for(timeout=90_000)
    text = sb.inner_text()
    assert "does not say which attributes are labels" in text
    assert "xml=" not in text and "n_labels" not in text
    set_number(sb, "Number of label columns at the end", 2, page)
    sb.get_by_role("button", name="Open with these label columns").click()
    _in_use(page, "corel5k/train.arff")
    assert "30 points × 3 features, 2 labels" in sb.inner_text()
