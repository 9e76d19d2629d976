"""End-to-end: the dashboard as ``scripts/dashboard.sh`` starts it (featagg_app.server.serve). The
very first visitor of a fresh server opens a deep link to a page (a bookmark, a link a
teacher shared) and gets the real app: the Home/Data/... navigation and the dataset picker,
not the page run on its own."""
import time

import pytest

from conftest import serving
from e2e_util import page_text, server_log_tail, sidebar, wait_for_app


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("serve") / "serve.log", launcher="serve",
                       timeout_s=900)


@pytest.mark.e2e
def test_first_visit_by_deep_link_gets_the_whole_app(fresh_server, page):
    page.goto(fresh_server + "/feature_agglomeration")   # nobody has opened "/" yet
    wait_for_app(page)
    nav = page.locator('[data-testid="stSidebarNav"]')
    nav.get_by_text("Home", exact=True).wait_for()
    nav_text = nav.inner_text()
    for title in ("Data", "Feature agglomeration", "Extreme classification", "Compare"):
        assert title in nav_text, (nav_text, server_log_tail(fresh_server))
    assert "feature agglomeration" not in nav_text      # not the file-name menu of v1
    assert "Dataset" in sidebar(page).inner_text()       # the picker is there
    assert "How it works" in page_text(page)
    # the launcher says where it listens (this machine only by default) and compiles the
    # numba kernels in background processes while it already serves (issue 11: no visitor
    # waits for the JIT before the first page)
    deadline = time.monotonic() + 60
    while True:
        log = open(fresh_server.log, encoding="utf-8", errors="replace").read()
        if "[featagg] kernels: compiling" in log or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "only (this machine)" in log, server_log_tail(fresh_server)
    assert "[featagg] kernels: compiling" in log, server_log_tail(fresh_server)
