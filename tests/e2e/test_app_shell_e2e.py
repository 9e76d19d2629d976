"""End-to-end: the navigation lists the pages that exist in order, and every page opens
in the browser without an exception box or a traceback; a good upload becomes the dataset."""
from pathlib import Path

import pytest

from e2e_util import goto_page, metric_cards, page_text, sidebar, upload_file, wait_for_app

ROOT = Path(__file__).resolve().parents[2]


def _existing_pages():
    import ast
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(ast.literal_eval(n.value) for n in ast.walk(tree)
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    return [(f, title) for f, title, _ in pages if (ROOT / f).is_file()]


@pytest.mark.e2e
def test_every_page_opens_without_a_traceback(app_server, page):
    page.goto(app_server)
    wait_for_app(page)
    page.locator('[data-testid="stSidebarNavLink"]').first.wait_for()
    links = [t.strip() for t in
             page.locator('[data-testid="stSidebarNavLink"]').all_inner_texts()]
    expected = ["Home"] + [title for _, title in _existing_pages()]
    assert [l.split("\n")[-1].strip() for l in links] == expected
    page.screenshot(path="/tmp/featagg_home.png")
    for _, title in _existing_pages():
        goto_page(page, title)
        assert page.locator('[data-testid="stException"]').count() == 0, title
        assert "Traceback" not in page_text(page), title
        # the dataset picker is on every page
        assert sidebar(page).get_by_text("Dataset", exact=True).is_visible(), title


@pytest.mark.e2e
def test_good_upload_becomes_the_dataset(app_server, page, tmp_path):
    page.goto(app_server)
    wait_for_app(page)
    goto_page(page, "Data")
    good = tmp_path / "tiny.txt"
    good.write_bytes(b"3 5 2\n0,1 0:1 2:0.5\n1 1:2 4:1\n0 3:1\n")
    upload_file(page, good)
    sidebar(page).locator('[data-testid="stAlert"]').filter(has_text="Loaded").wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stMetricValue\"]')]"
        ".some(e => e.innerText.trim() === '5')")
    cards = metric_cards(page)
    assert (cards["Points n (train)"], cards["Features d"], cards["Labels L"]) == ("3", "5", "2")
    assert "tiny.txt" in page_text(page)
