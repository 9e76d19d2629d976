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

_LARGE_CSS = f"""<style>
html {{ font-size: {LARGE_ROOT_PX}px; }}
[data-testid="stMetricValue"] {{ font-size: 2.6rem; }}
[data-testid="stSidebar"] {{ min-width: 26rem; }}
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
