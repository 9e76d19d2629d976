"""Shared plotly figure builders for the dashboard pages (no streamlit here: unit-testable).

Every builder takes already-aggregated numbers (counts per bin, per rank, per category), so
a figure never ships n raw values to the browser, and returns a ``plotly.graph_objects.Figure``
with the house style (:func:`style`). Pages draw them with
``featagg_app.views.display.plotly_chart(fig)`` (the session's large-text setting applied).

**Bounded.** No figure of the dashboard holds more than :data:`MAX_MARKS` marks (points,
bars, sectors, cells; :func:`mark_count`), whatever the data's size: rank curves are
log-spaced (:func:`log_spaced_ranks`), histograms binned, other curves decimated
(:func:`decimate`), trees drawn a few levels at a time with drill-down. The AppTests assert
it on the figures the pages build.
"""
from __future__ import annotations

import re

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6",
           "#9D755D", "#BAB0AC", "#EECA3B"]
HEAD_COLOR, TAIL_COLOR = "#E45756", "#4C78A8"
MAX_POINTS = 2000
#: most marks (points, bars, sectors, heatmap cells) one figure may hold
MAX_MARKS = 5000
#: fonts of the large-text (projector) display: base, titles
LARGE_FONT, LARGE_TITLE_FONT = 19, 24


def mark_count(fig: go.Figure) -> int:
    """Marks a figure draws: per trace its points (x/y), sectors (ids/labels), cells (z)
    or values, whichever it has, plus shapes and annotations."""
    total = 0
    for t in fig.data:
        n = 0
        z = getattr(t, "z", None)
        if z is not None:
            n = int(np.asarray(z, dtype=object).size)
        else:
            for attr in ("ids", "labels", "x", "y", "values", "r"):
                v = getattr(t, attr, None)
                if v is not None:
                    n = max(n, len(v))
        total += n
    total += len(fig.layout.shapes or ()) + len(fig.layout.annotations or ())
    return total


def decimate(x, y, max_points: int = MAX_POINTS):
    """``(x, y)`` thinned to at most ``max_points`` points for a line or scatter chart: every
    k-th point, and the first, the last and each block's extremes of ``y`` kept (a peak
    never disappears). Returns numpy arrays (unchanged when already short)."""
    x, y = np.asarray(x), np.asarray(y)
    n = x.shape[0]
    if n <= max_points:
        return x, y
    blocks = max(1, max_points // 3)
    edges = np.linspace(0, n, blocks + 1).round().astype(np.int64)
    keep = [0, n - 1]
    yv = np.asarray(y, dtype=float)
    for a, b in zip(edges[:-1], edges[1:]):
        if b <= a:
            continue
        seg = yv[a:b]
        finite = np.isfinite(seg)
        keep.append(a)
        if finite.any():
            idx = np.flatnonzero(finite)
            keep.append(a + int(idx[np.argmin(seg[finite])]))
            keep.append(a + int(idx[np.argmax(seg[finite])]))
    keep = np.unique(np.asarray(keep, dtype=np.int64))[:max_points]
    return x[keep], y[keep]


#: characters per line of a chart title with large text: a chart in half of a 1280-pixel
#: window's main area is about 330 px wide, 28 characters of the large title font
LARGE_TITLE_CHARS = 28


def wrap_title(text: str, width: int = LARGE_TITLE_CHARS) -> str:
    """``text`` broken into lines of at most ``width`` characters at spaces (plotly's
    ``<br>``; a word longer than a line keeps its own line); line breaks already in it stay,
    and markup (``<b>…</b>``) counts no width."""
    out_lines = []
    for line in re.split(r"<br\s*/?>", str(text)):
        cur, cur_len = [], 0
        for word in line.split(" "):
            w = len(re.sub(r"<[^>]+>", "", word))
            if cur and cur_len + 1 + w > width:
                out_lines.append(" ".join(cur))
                cur, cur_len = [], 0
            cur.append(word)
            cur_len += w + (1 if cur_len else 0)
        out_lines.append(" ".join(cur))
    return "<br>".join(out_lines)


def for_display(fig: go.Figure, large: bool = False) -> go.Figure:
    """``fig`` as a page shows it: with ``large`` (the projector setting) a copy with
    bigger fonts (base, title, axes, legend, hover), its title wrapped to
    :data:`LARGE_TITLE_CHARS` characters a line (the top margin grown to hold the lines) and
    a taller canvas; else ``fig``."""
    if not large:
        return fig
    out = go.Figure(fig)
    height = out.layout.height or 360
    out.update_layout(font=dict(size=LARGE_FONT), title_font_size=LARGE_TITLE_FONT,
                      legend_font_size=LARGE_FONT, hoverlabel_font_size=LARGE_FONT,
                      height=int(height * 1.25))
    title = out.layout.title.text
    if title:
        wrapped = wrap_title(title)
        lines = wrapped.count("<br>") + 1
        legend_above = out.layout.legend.orientation == "h" and \
            (out.layout.legend.y is None or out.layout.legend.y >= 1.0)
        top = 16 + int(lines * LARGE_TITLE_FONT * 1.3) + (LARGE_FONT + 14 if legend_above
                                                          else 0)
        total = int(height * 1.25) + 30 * (lines - 1)
        # plotly puts a "top"-anchored title's first baseline at y: one line down from the
        # top of the canvas, so the first line is not cut and the rest stay above the legend
        out.update_layout(title=dict(text=wrapped, yref="container", yanchor="top",
                                     y=1.0 - (LARGE_TITLE_FONT + 10) / total),
                          margin=dict(t=max(top, out.layout.margin.t or 0)), height=total)
    out.update_xaxes(title_font_size=LARGE_FONT, tickfont_size=LARGE_FONT - 2)
    out.update_yaxes(title_font_size=LARGE_FONT, tickfont_size=LARGE_FONT - 2)
    # axis titles wrap too (a half-width chart holds about LARGE_TITLE_CHARS characters of
    # the axis font on its x axis)
    out.for_each_xaxis(lambda ax: ax.update(title_text=wrap_title(ax.title.text))
                       if ax.title.text else None)
    out.for_each_yaxis(lambda ax: ax.update(title_text=wrap_title(ax.title.text, 22))
                       if ax.title.text else None)
    if any(getattr(t, "type", "") in ("icicle", "sunburst", "treemap") for t in out.data):
        out.update_traces(textfont_size=LARGE_FONT, insidetextfont_size=LARGE_FONT,
                          selector=lambda t: t.type in ("icicle", "sunburst", "treemap"))
    return out


def style(fig: go.Figure, title: Optional[str] = None, height: int = 360,
          xlabel: Optional[str] = None, ylabel: Optional[str] = None) -> go.Figure:
    """Apply the house layout (white template, compact margins, titles) and return ``fig``."""
    fig.update_layout(template="plotly_white", height=height,
                      margin=dict(l=10, r=10, t=50 if title else 20, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right",
                                  x=1.0))
    if title:
        fig.update_layout(title=dict(text=title, x=0.0, xanchor="left"))
    if xlabel is not None:
        fig.update_xaxes(title_text=xlabel)
    if ylabel is not None:
        fig.update_yaxes(title_text=ylabel)
    return fig


def log_ticks(lo: float, hi: float) -> list:
    """Readable tick values for a log axis over [lo, hi]: powers of ten when the range spans
    three decades or more, else 1-2-5 steps (so a narrow range still has several ticks)."""
    lo, hi = max(float(lo), 1e-12), max(float(hi), 1e-12)
    k0, k1 = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    steps = (1,) if k1 - k0 >= 3 else (1, 2, 5)
    ticks = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in steps]
    inside = [t for t in ticks if lo / 1.0001 <= t <= hi * 1.0001]
    return inside if len(inside) >= 2 else ticks


def _fmt_tick(t: float) -> str:
    return f"{t:,.0f}" if t >= 1 else f"{t:g}"


def log_axes(fig: go.Figure, x: bool = True, y: bool = True) -> go.Figure:
    """Log scale with readable ticks (:func:`log_ticks`) on the chosen axes, from the data
    of the figure's traces."""
    for axis, on in (("x", x), ("y", y)):
        if not on:
            continue
        vals = [np.asarray(getattr(t, axis), dtype=float) for t in fig.data
                if getattr(t, axis, None) is not None and len(getattr(t, axis))]
        vals = np.concatenate(vals) if vals else np.zeros(0)
        vals = vals[np.isfinite(vals) & (vals > 0)]
        kw = dict(type="log", minor=dict(showgrid=False))
        if vals.size:
            ticks = log_ticks(vals.min(), vals.max())
            kw.update(tickvals=ticks, ticktext=[_fmt_tick(t) for t in ticks])
        (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**kw)
    return fig


def log_spaced_ranks(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """0-based ranks to plot for a curve of ``n`` points on a log x axis: all of them when
    ``n <= max_points``, else ~``max_points`` log-spaced ranks (always first and last)."""
    if n <= max_points:
        return np.arange(n)
    r = np.unique(np.round(np.geomspace(1, n, max_points)).astype(np.int64) - 1)
    return r


def rank_frequency(counts: np.ndarray, *, title: str = "", what: str = "label",
                   names: Optional[Sequence[str]] = None, head_size: Optional[int] = None,
                   height: int = 380) -> go.Figure:
    """Log–log rank/frequency plot of ``counts`` (one per item, any order): the power law.

    Items are sorted by decreasing count; zero counts are left out (log scale). When
    ``head_size`` is given, the first ``head_size`` ranks are drawn in the head colour and
    the rest in the tail colour.
    """
    counts = np.asarray(counts).ravel()
    order = np.argsort(-counts, kind="stable")
    sorted_counts = counts[order]
    nz = int(np.count_nonzero(sorted_counts > 0))
    ranks = log_spaced_ranks(nz)
    x = ranks + 1
    y = sorted_counts[ranks]
    hover = None
    if names is not None:
        names = list(names)
        hover = [str(names[i]) for i in order[ranks]]
    fig = go.Figure()
    if head_size is not None and 0 < head_size < nz:
        head = x <= head_size
        parts = [(head, f"head ({head_size:,} {what}s)", HEAD_COLOR),
                 (~head, f"tail ({nz - head_size:,} {what}s)", TAIL_COLOR)]
    else:
        parts = [(np.ones_like(x, dtype=bool), f"{what}s", TAIL_COLOR)]
    for mask, name, color in parts:
        fig.add_trace(go.Scatter(
            x=x[mask], y=y[mask], mode="lines+markers", name=name,
            marker=dict(size=4, color=color), line=dict(color=color, width=1.5),
            text=None if hover is None else [h for h, m in zip(hover, mask) if m],
            hovertemplate=("%{text}<br>" if hover is not None else "")
            + "rank %{x:,}<br>%{y:,} points<extra></extra>"))
    log_axes(fig)
    return style(fig, title, height, xlabel=f"{what} rank (most frequent first)",
                 ylabel="number of points")


def count_histogram(values: np.ndarray, *, title: str = "", xlabel: str = "",
                    ylabel: str = "number of points", max_bins: int = 60,
                    color: str = PALETTE[0], height: int = 320) -> go.Figure:
    """Bar histogram of non-negative integer ``values`` (e.g. labels per point): one bar per
    value when there are few distinct values, else ``max_bins`` equal-width integer bins."""
    v = np.asarray(values).ravel().astype(np.int64)
    fig = go.Figure()
    if v.size:
        lo, hi = int(v.min()), int(v.max())
        if hi - lo + 1 <= max_bins:
            cnt = np.bincount(v - lo, minlength=hi - lo + 1)
            xs = np.arange(lo, hi + 1)
            fig.add_trace(go.Bar(x=xs, y=cnt, marker_color=color,
                                 hovertemplate="%{x:,}: %{y:,}<extra></extra>"))
        else:
            width = int(np.ceil((hi - lo + 1) / max_bins))
            b = (v - lo) // width
            cnt = np.bincount(b, minlength=int(b.max()) + 1)
            left = lo + np.arange(cnt.size) * width
            fig.add_trace(go.Bar(x=left + (width - 1) / 2, y=cnt, width=width * 0.95,
                                 marker_color=color,
                                 customdata=np.stack([left, left + width - 1], axis=1),
                                 hovertemplate="%{customdata[0]:,}–%{customdata[1]:,}: "
                                               "%{y:,}<extra></extra>"))
    return style(fig, title, height, xlabel=xlabel, ylabel=ylabel)


def bar(names: Sequence, values: Sequence, *, title: str = "", xlabel: str = "",
        ylabel: str = "", horizontal: bool = False, log_value: bool = False,
        color: str = PALETTE[0], height: int = 360, hover_suffix: str = "",
        show_values: bool = False, max_bars: int = 200) -> go.Figure:
    """Plain bar chart of ``values`` per name (horizontal bars list the first name on top);
    ``show_values`` writes each value on its bar. Only the first ``max_bars`` names are
    drawn (callers sort them, largest first); the title then says so."""
    names = [str(n) for n in names]
    values = list(values)
    if len(names) > max_bars:
        title = f"{title} (first {max_bars:,} of {len(names):,})"
        names, values = names[:max_bars], values[:max_bars]
    fig = go.Figure()
    if horizontal:
        fig.add_trace(go.Bar(y=names[::-1], x=values[::-1], orientation="h", marker_color=color,
                             hovertemplate="%{y}: %{x:,}" + hover_suffix + "<extra></extra>"))
        if log_value:
            log_axes(fig, y=False)
    else:
        fig.add_trace(go.Bar(x=names, y=values, marker_color=color,
                             hovertemplate="%{x}: %{y:,}" + hover_suffix + "<extra></extra>"))
        if show_values:
            fig.update_traces(text=[f"{v:,}" for v in values], textposition="outside",
                              cliponaxis=False)
        if log_value:
            log_axes(fig, x=False)
    return style(fig, title, height, xlabel=xlabel, ylabel=ylabel)


def loglog_distribution(values: np.ndarray, *, title: str = "", xlabel: str = "",
                        ylabel: str = "number of nodes", height: int = 360) -> go.Figure:
    """How many items have each value (e.g. nodes per degree), on log–log axes; zeros are
    counted in the caption's sense but cannot be drawn on a log axis and are left out.
    More than :data:`MAX_POINTS` distinct values are binned in log-spaced bins (the count
    per bin divided by its width)."""
    v = np.asarray(values).ravel().astype(np.int64)
    v = v[v > 0]
    fig = go.Figure()
    if v.size:
        cnt = np.bincount(v)
        xs = np.flatnonzero(cnt)
        ys = cnt[xs]
        if xs.size > MAX_POINTS:
            # log-spaced bins past the first values: a count per bin, divided by the bin's
            # width (so the heavy tail keeps its slope on log-log axes)
            edges = np.unique(np.round(np.geomspace(1, xs.max() + 1, MAX_POINTS)).astype(
                np.int64))
            b = np.searchsorted(edges, xs, side="right") - 1
            tot = np.bincount(b, weights=ys, minlength=edges.size)
            width = np.diff(np.append(edges, xs.max() + 1)).astype(float)
            nz = np.flatnonzero(tot)
            xs, ys = edges[nz], tot[nz] / width[nz]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers",
                                 marker=dict(size=6, color=PALETTE[0]),
                                 hovertemplate="%{x:,}: %{y:,}<extra></extra>"))
    log_axes(fig)
    return style(fig, title, height, xlabel=xlabel, ylabel=ylabel)


def grouped_bars(categories: Sequence, series: dict, *, title: str = "", xlabel: str = "",
                 ylabel: str = "", height: int = 380) -> go.Figure:
    """Bars of several series side by side per category (``series``: name -> values)."""
    fig = go.Figure()
    cats = [str(c) for c in categories]
    for i, (name, vals) in enumerate(series.items()):
        fig.add_trace(go.Bar(x=cats, y=list(vals), name=str(name),
                             marker_color=PALETTE[i % len(PALETTE)]))
    fig.update_layout(barmode="group")
    return style(fig, title, height, xlabel=xlabel, ylabel=ylabel)


def line(x: Sequence, series: dict, *, title: str = "", xlabel: str = "", ylabel: str = "",
         log_x: bool = False, log_y: bool = False, height: int = 360) -> go.Figure:
    """Lines with markers, one per series (``series``: name -> y values over ``x``)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        xs, ys = decimate(np.asarray(list(x)), np.asarray(list(ys)),
                          max(2, MAX_POINTS // max(1, len(series))))
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=str(name),
                                 marker=dict(color=PALETTE[i % len(PALETTE)]),
                                 line=dict(color=PALETTE[i % len(PALETTE)])))
    log_axes(fig, x=log_x, y=log_y)
    return style(fig, title, height, xlabel=xlabel, ylabel=ylabel)
