"""End-to-end: the *Large text (projector)* display at 1280×720 (issue 31): on every page,
every metric card's value, label and delta, every button, every multiselect chip and
selectbox value (a run's name, a dataset and split) and every chart title fits its box
— measured in the browser (``scrollWidth <= clientWidth``, no ellipsis cut, a chart title
no wider than its chart), with results on the pages that show cards only after a run.

Screenshots of each page go to ``$FEATAGG_SHOTS`` (default: the test's tmp folder)."""
import json
import os
from pathlib import Path

import pytest

from e2e_util import (click_and_wait, goto_page, server_log_tail, set_number, sidebar,
                      wait_for_app, select_sample)

VIEWPORT = {"width": 1280, "height": 720}

#: every text box in the main area that must not be cut: what ``overflow`` hides or an
#: ellipsis shortens (a card's value, label and delta, a button's label), as
#: [{what, text, scroll, client, ellipsis}] of those that do not fit
_MEASURE = r"""() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const sel = ['[data-testid="stMetricValue"]', '[data-testid="stMetricLabel"]',
               '[data-testid="stMetricDelta"]', 'button', '[data-testid="stMultiSelect"]',
               '[data-testid="stSelectbox"]'];
  const bad = [];
  let seen = 0;
  for (const s of sel) {
    for (const box of main.querySelectorAll(s)) {
      if (!box.offsetParent) continue;                 // not shown (a closed expander)
      const nodes = [box, ...box.querySelectorAll('*')];
      seen += 1;
      for (const el of nodes) {
        const cs = getComputedStyle(el);
        if (cs.display === 'none' || el.clientWidth === 0) continue;
        if (el.tagName === 'svg' || el.closest('svg')) continue;
        const hides = cs.overflowX !== 'visible' || cs.textOverflow === 'ellipsis';
        // a selectbox shows its value in an <input>: its text is the value
        const text = ((el.tagName === 'INPUT' ? el.value : el.innerText) || '').trim();
        if (!text) continue;
        if (hides && el.scrollWidth > el.clientWidth + 1) {
          bad.push({what: s, text: text.slice(0, 60), scroll: el.scrollWidth,
                    client: el.clientWidth, ellipsis: cs.textOverflow});
          break;
        }
      }
    }
  }
  // chart titles: the title's drawn width within its chart's width
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const w = plot.getBoundingClientRect().width;
    for (const t of plot.querySelectorAll('.gtitle')) {
      seen += 1;
      const r = t.getBoundingClientRect();
      const p = plot.getBoundingClientRect();
      if (r.width > w + 1 || r.left < p.left - 1 || r.right > p.right + 1) {
        bad.push({what: 'chart title', text: (t.textContent || '').slice(0, 60),
                  scroll: Math.round(r.width), client: Math.round(w), ellipsis: ''});
      }
    }
  }
  return {bad, seen};
}"""


def _shots(tmp_path) -> Path:
    d = Path(os.environ.get("FEATAGG_SHOTS", str(tmp_path)))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _check(page, name, shots, found, min_seen=1):
    """Measure the page and take its screenshot; ``found[name]`` = what does not fit (every
    page is measured before the test fails, so one run shows them all)."""
    wait_for_app(page)
    page.wait_for_timeout(1200)           # plotly lays its titles out after the run
    got = page.evaluate(_MEASURE)
    page.screenshot(path=str(shots / f"large_text_{name}.png"))
    # the whole page to look at: a taller window of the same width (the widths measured
    # above do not change with the height)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": 3000})
    page.wait_for_timeout(800)
    page.screenshot(path=str(shots / f"large_text_{name}_tall.png"))
    page.set_viewport_size(VIEWPORT)
    assert got["seen"] >= min_seen, (name, got)   # the boxes to measure are there
    found[name] = got["bad"]
    (shots / "large_text_measured.json").write_text(json.dumps(found, indent=1))


def _cards(page):
    return page.locator('[data-testid="stMain"] [data-testid="stMetric"]')


@pytest.mark.e2e
def test_large_text_fits_at_1280x720_on_every_page(app_server, browser, tmp_path):
    shots = _shots(tmp_path)
    found = {}
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(300_000)
    page = context.new_page()
    try:
        page.goto(app_server)
        wait_for_app(page)
        select_sample(page, "Bibtex")
        sidebar(page).get_by_text("Large text (projector)").click()
        wait_for_app(page)
        # the large-text CSS is on: the root font grows (Streamlit's default is 16 px)
        page.wait_for_function("() => getComputedStyle(document.documentElement).fontSize"
                               " !== '16px'", timeout=30_000)
        _check(page, "home", shots, found, min_seen=0)
        main = page.locator('[data-testid="stMain"]')

        goto_page(page, "Data")
        _cards(page).first.wait_for(state="visible")
        _check(page, "data", shots, found, min_seen=4)
        # the measurement can fail: a card value cut with an ellipsis (Streamlit's own
        # style, in a box too narrow for it) is reported
        value = 'html body [data-testid="stMain"] [data-testid="stMetricValue"]'
        cut = page.add_style_tag(content=(
            f'{value} {{ width: 1.5rem !important; }} {value}, {value} * {{ white-space: '
            'nowrap !important; overflow: hidden !important; text-overflow: ellipsis '
            '!important; max-width: none !important; }'))
        caught = page.evaluate(_MEASURE)["bad"]
        assert any(b["what"] == '[data-testid="stMetricValue"]' for b in caught), caught
        cut.evaluate("el => el.remove()")
        assert not page.evaluate(_MEASURE)["bad"]

        goto_page(page, "Triage")
        _check(page, "triage", shots, found)

        goto_page(page, "Feature agglomeration")
        click_and_wait(page, "Run", timeout_ms=300_000)
        _cards(page).first.wait_for(state="visible")
        _check(page, "feature_agglomeration", shots, found, min_seen=4)

        goto_page(page, "Extreme classification")
        set_number(main, "Trees", 1, page)
        click_and_wait(page, "Train", timeout_ms=300_000)
        _cards(page).first.wait_for(state="visible")
        _check(page, "extreme_classification", shots, found, min_seen=4)

        goto_page(page, "Graph features")
        set_number(main, "Candidate block models", 1, page)
        set_number(main, "Iterations", 20, page)
        click_and_wait(page, "Run BMGUFS", timeout_ms=300_000)
        _cards(page).first.wait_for(state="visible")
        _check(page, "graph_features", shots, found, min_seen=4)

        goto_page(page, "Vocabulary compression")
        main.get_by_text("More settings").first.click()
        main.get_by_text("Draw the MI-loss-versus-budget curves").first.click()
        wait_for_app(page)
        click_and_wait(page, "Compress", timeout_ms=300_000)
        _cards(page).first.wait_for(state="visible")
        _check(page, "vocabulary", shots, found, min_seen=4)

        goto_page(page, "Compare")
        _check(page, "compare", shots, found)

        goto_page(page, "Export")
        _check(page, "export", shots, found)

        goto_page(page, "Rare labels")        # on the Extreme classification run above
        click_and_wait(page, "Re-rank with REFRAG", timeout_ms=300_000)
        _cards(page).first.wait_for(state="visible")
        _check(page, "rare_labels", shots, found, min_seen=3)
    finally:
        context.close()
    bad = {name: b for name, b in found.items() if b}
    assert len(found) == 10 and not bad, (bad, server_log_tail(app_server, 20))
