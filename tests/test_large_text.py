"""Large text (projector): chart titles wrapped to lines that fit a half-width chart, with
the top margin grown to hold them (the browser measurement is tests/e2e/test_large_text_e2e.py)."""
import re

import plotly.graph_objects as go

from featagg_app.views import charts


def _plain(lines):
    return [re.sub(r"<[^>]+>", "", ln) for ln in lines]


def test_wrap_title_breaks_at_spaces_within_the_width():
    text = "Accuracy by label frequency (contribution to P@5, sums to 29.0%)"
    lines = charts.wrap_title(text, 28).split("<br>")
    assert " ".join(lines) == text                     # nothing lost or reordered
    assert all(len(ln) <= 28 for ln in lines) and len(lines) == 3
    # a break already there stays; markup takes no width; a too-long word keeps its line
    got = charts.wrap_title("<b>Bold</b> short<br>next " + "x" * 40, 12).split("<br>")
    assert _plain(got) == ["Bold short", "next", "x" * 40]
    assert charts.wrap_title("fits", 28) == "fits"


def test_large_text_title_lines_get_room_above_the_plot():
    long_title = "P@k and training time against the number of trees and K of the sweep"
    fig = charts.style(go.Figure(go.Bar(x=[1, 2], y=[3, 4])), title=long_title, height=360)
    big = charts.for_display(fig, large=True)
    lines = big.layout.title.text.split("<br>")
    assert len(lines) >= 3 and " ".join(lines) == long_title   # 68 characters
    assert all(len(ln) <= charts.LARGE_TITLE_CHARS for ln in lines)
    # every line of the title above the plot area: margin >= lines x the title's font
    assert big.layout.margin.t >= len(lines) * charts.LARGE_TITLE_FONT
    assert big.layout.height > charts.for_display(
        charts.style(go.Figure(go.Bar(x=[1], y=[1])), title="short", height=360),
        large=True).layout.height
    # the page's own figure is untouched, and without large text nothing changes
    assert fig.layout.title.text == long_title
    assert charts.for_display(fig, large=False) is fig
