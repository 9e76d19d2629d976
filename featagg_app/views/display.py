"""How pages show things: the session's display options (the sidebar's "Large text" toggle
for projectors), charts drawn with them, and tables shown a page of rows at a time.

Pages call :func:`plotly_chart` instead of ``st.plotly_chart`` and :func:`table` for a table
that can grow with the data. The large-text setting is per session (``st.session_state``):
page text grows through CSS (the whole page scales: Streamlit sizes its text in rem), and
charts get bigger fonts through :func:`featagg_app.views.charts.for_display`.
"""
from __future__ import annotations

import logging
from typing import Optional

import pandas as pd
import streamlit as st

from featagg_app.views import charts

K_LARGE = "featagg_large_text"
#: rows of a table page
PAGE_ROWS = 25
#: the root font size of the large-text display (Streamlit's default is 16 px)
LARGE_ROOT_PX = 21

_log = logging.getLogger("featagg_app")

#: the narrowest a column may get with large text on: narrower columns wrap to the next row
#: (fewer columns side by side), so a metric card keeps room for its number
LARGE_MIN_COLUMN_REM = 13

#: The large-text CSS. The root font grows (Streamlit sizes its text in rem); the wide
#: layout's side padding and the sidebar give room back at 1280 px; columns wrap rather than
#: shrink below LARGE_MIN_COLUMN_REM; metric values scale with the window (clamp) and, with
#: labels, deltas and button texts, wrap instead of being cut with an ellipsis (Streamlit's
#: own print styles do the same for metrics); a multiselect's chips wrap their text and its
#: box grows to hold them. A selectbox shows its value in an <input>, which cannot wrap:
#: pages give such a box a row of its own when large text is on.
#: tests/e2e/test_large_text_e2e.py measures it.
_LARGE_CSS = f"""<style>
html {{ font-size: {LARGE_ROOT_PX}px; }}
[data-testid="stSidebar"] {{ min-width: min(24rem, 30vw) !important;
  max-width: min(24rem, 30vw) !important; }}
[data-testid="stMainBlockContainer"] {{ padding-left: clamp(1rem, 2.5vw, 4rem) !important;
  padding-right: clamp(1rem, 2.5vw, 4rem) !important; max-width: 100% !important; }}
[data-testid="stMain"] [data-testid="stHorizontalBlock"] {{ flex-wrap: wrap !important; }}
[data-testid="stMain"] [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] {{
  min-width: min(100%, {LARGE_MIN_COLUMN_REM}rem) !important; }}
[data-testid="stMetricValue"] {{ font-size: clamp(1.25rem, 2.3vw, 2.4rem) !important; }}
[data-testid="stMetricDelta"] {{ font-size: clamp(0.8rem, 1.2vw, 1rem) !important; }}
[data-testid="stMetricValue"], [data-testid="stMetricValue"] *,
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricDelta"], [data-testid="stMetricDelta"] *,
[data-testid="stMain"] button, [data-testid="stMain"] button * {{
  white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; overflow-wrap: anywhere; min-width: 0; }}
[data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] * {{ max-width: 100%; }}
[data-testid="stMetric"] {{ overflow: visible !important; }}
[data-testid="stMain"] button {{ height: auto !important; max-width: 100%; }}
[data-testid="stMultiSelectTagsContainer"] {{ flex-wrap: wrap !important;
  overflow: visible !important; }}
[data-testid="stMultiSelectTagsContainer"] span {{ white-space: normal !important;
  text-overflow: clip !important; overflow: visible !important; overflow-wrap: anywhere;
  height: auto !important; }}
[data-testid="stMultiSelectTagsContainer"] > span > span {{ max-width: 100% !important; }}
[data-testid="stMultiSelect"] div {{ height: auto !important; max-height: none !important; }}
</style>"""


def large_text() -> bool:
    """True when this session asked for large text."""
    return bool(st.session_state.get(K_LARGE, False))


def display_options() -> None:
    """The sidebar's display toggle (call inside the sidebar) and, when on, the page CSS."""
    st.subheader("Display")
    st.toggle("Large text (projector)", key=K_LARGE,
              help="Bigger text on the pages and in the charts, for a room: this browser "
                   "session only.")
    apply_css()


def apply_css() -> None:
    """Inject the large-text CSS when this session asked for it."""
    if large_text():
        st.html(_LARGE_CSS)


def plotly_chart(fig, container=None, **kwargs):
    """``st.plotly_chart(fig, width="stretch", **kwargs)`` in ``container`` (default: the
    page), with the session's large-text fonts. A figure over
    :data:`featagg_app.views.charts.MAX_MARKS` marks is logged (the views keep them bounded)."""
    n = charts.mark_count(fig)
    if n > charts.MAX_MARKS:
        _log.warning("featagg: a chart with %d marks (over %d): %s", n, charts.MAX_MARKS,
                     getattr(fig.layout.title, "text", ""))
    kwargs.setdefault("width", "stretch")
    return (container or st).plotly_chart(charts.for_display(fig, large_text()), **kwargs)


def page_of(df: pd.DataFrame, page: int, rows: int = PAGE_ROWS) -> pd.DataFrame:
    """Rows ``(page - 1) * rows`` to ``page * rows`` of ``df`` (page 1 is the first;
    clipped to the last page)."""
    n_pages = max(1, -(-len(df) // rows))
    page = min(max(1, int(page)), n_pages)
    return df.iloc[(page - 1) * rows: page * rows]


#: a count column (points, nodes, rows, training examples) with the browser's thousands
#: separator ("29,170", as the metric cards), for ``column_config``; ids keep plain digits
COUNT = st.column_config.NumberColumn(format="localized")


def table(df: pd.DataFrame, key: str, container=None, rows: int = PAGE_ROWS,
          what: str = "rows", **kwargs) -> None:
    """``st.dataframe(df)`` a page of ``rows`` rows at a time: a table longer than that
    gets a page number input and says which rows it shows; ``kwargs`` go to
    ``st.dataframe`` (``hide_index``, ``column_config``, …)."""
    box = container or st
    kwargs.setdefault("width", "stretch")
    if len(df) <= rows:
        box.dataframe(df, **kwargs)
        return
    n_pages = -(-len(df) // rows)
    with box.container():
        c1, c2 = st.columns([1, 3])
        page = c1.number_input("Page", 1, n_pages, 1, key=f"{key}__page",
                               label_visibility="collapsed")
        first = (int(page) - 1) * rows
        c2.caption(f"{what} {first + 1:,}–{min(first + rows, len(df)):,} of {len(df):,} "
                   f"(page {int(page):,} of {n_pages:,})")
        st.dataframe(page_of(df, int(page), rows), **kwargs)
