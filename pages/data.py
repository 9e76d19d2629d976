"""Data page: the shape of the session's dataset — sizes, sparsity, and the power law."""
import streamlit as st

from featagg_app.views import data as dv
from featagg_app.views import display
from featagg_app import health_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error

st.title("Data")

data = state.current_dataset()
if data is None:
    data = state.require_dataset("multilabel")
fp = data.fingerprint if state.current_dataset() is not data else state.current_fingerprint()
st.caption(f"**{md_escape(state.dataset_label(data))}**"
           + (f" · {md_escape(data.source)}" if getattr(data, "source", "") else ""))
try:
    split = state.current_split(data)
    st.caption(state.split_caption(split))
except ValueError as exc:             # e.g. a one-row upload: nothing to split
    split = None
    st.caption(f"No split: {md_escape(exc)}")

# is the data sound? first, before any statistic (cheap checks inline, label errors on ask)
health_ui.health_section("data", data, split)

with st.expander("How to read this page", expanded=False):
    st.markdown(
        "**Sparse**: each point (a document, a user) uses a handful of the *d* features and "
        "carries a few of the *L* labels; *density* is the fraction of the n × d matrix that "
        "is non-zero.\n\n"
        "**Power law**: sort the labels from most to least frequent and plot frequency "
        "against rank on log–log axes — a near-straight line falling to the right. A few "
        "**head** labels (red) hold half of all label assignments; the long **tail** (blue) "
        "holds most of the labels, each seen in only a few points. That is why accuracy "
        "alone (precision@k) rewards predicting the head, why propensity-scored metrics "
        "exist, and why methods like REFRAG work to lift tail labels. Word features follow "
        "the same law, which is what feature agglomeration exploits.")


#: shares in percent with two decimals on every row: Streamlit's "percent" format drops
#: trailing zeros, so one column read 14.34%, 7.4%, 6.07%
PERCENT_2 = st.column_config.NumberColumn(format="%.2f %%")


def _in_percent(frame, column):
    """``frame`` with the fractions of ``column`` in percent (done once, in the cached views)."""
    return frame.assign(**{column: 100 * frame[column]})


@st.cache_data(max_entries=16, show_spinner="Computing statistics…")
def _multilabel_view(fingerprint: str, _data):
    s = dv.multilabel_summary(_data)
    freq = dv.column_counts(_data.Y)
    return {
        "summary": s, "head": dv.head_size(freq),
        "label_fig": dv.label_frequency_figure(_data.Y, _data.label_names),
        "lpp_fig": dv.per_point_figure(_data.Y, "label"),
        "fpp_fig": dv.per_point_figure(_data.X, "feature"),
        # every label and feature by frequency: the tables page through them
        "top_labels": _in_percent(dv.top_items(freq, _data.label_names, None, "label",
                                               s["n"]), "share of points"),
        "top_features": _in_percent(dv.top_items(dv.column_counts(_data.X),
                                                 _data.feature_names, None, "feature", s["n"]),
                                    "share of points"),
    }


@st.cache_data(max_entries=16, show_spinner="Computing statistics…")
def _graph_view(fingerprint: str, _data):
    out = {"summary": dv.graph_summary(_data), "degree_fig": dv.degree_figure(_data.A)}
    if _data.y is not None:
        out["class_fig"] = dv.class_size_figure(_data.y, _data.class_names)
        out["classes"] = dv.class_sizes(_data.y, _data.class_names)
    if _data.X is not None and _data.X.shape[1]:
        out["fpp_fig"] = dv.per_point_figure(_data.X, "feature", unit="node")
        out["top_features"] = _in_percent(
            dv.top_items(dv.column_counts(_data.X), _data.feature_names, None, "feature",
                         _data.A.shape[0], unit="node"), "share of nodes")
    return out


@st.cache_data(max_entries=16, show_spinner="Computing statistics…")
def _table_view(fingerprint: str, _data):
    return {"summary": dv.table_summary(_data), "vocab": dv.vocabulary_sizes(_data),
            "vocab_fig": dv.vocabulary_figure(_data)}


@st.cache_data(max_entries=64, show_spinner=False)
def _table_top_values(fingerprint: str, column: str, _data):
    return _in_percent(dv.top_values(_data, column, 15), "positive rate")


def _cards(items):
    for col, (label, value, help_) in zip(st.columns(len(items)), items):
        col.metric(label, value, help=help_, border=True)


def _multilabel_page():
    v = _multilabel_view(fp, data)
    s = v["summary"]
    _cards([("Points n (train)", f"{s['n']:,}", "training points"),
            ("Test points", f"{s['n_test']:,}", "held-out points (0 when the file has no split)"),
            ("Features d", f"{s['d']:,}", None),
            ("Labels L", f"{s['L']:,}", None)])
    _cards([("Non-zeros (nnz)", f"{s['nnz']:,}", "stored entries of X"),
            ("Labels / point", f"{s['labels_per_point']:.2f}", "mean over training points"),
            ("Features / point", f"{s['features_per_point']:.1f}", "mean over training points"),
            ("Density", f"{s['density']:.3%}", "nnz / (n × d)")])
    display.plotly_chart(v["label_fig"])
    st.markdown(
        f"**Head and tail.** The **{v['head']:,}** most frequent labels "
        f"({v['head'] / max(s['L'], 1):.1%} of L) hold half of all label assignments; the "
        f"other **{s['L'] - v['head']:,}** share the rest. The most frequent label is in "
        f"{s['max_label_points']:,} training points, the median label in "
        f"{s['median_label_points']:,g}, the rarest in {s['min_label_points']:,}"
        + (f"; {s['tail_labels']:,} labels are in at most {dv.TAIL_MAX_POINTS} points"
           if s["tail_labels"] else "")
        + (f"; {s['unused_labels']:,} never appear in training" if s["unused_labels"] else "")
        + ".")
    c1, c2 = st.columns(2)
    display.plotly_chart(v["lpp_fig"], c1)
    display.plotly_chart(v["fpp_fig"], c2)
    c1, c2 = st.columns(2)
    pct = {"share of points": PERCENT_2, "points": display.COUNT}
    c1.markdown("**Most frequent labels**")
    display.table(v["top_labels"], "data_top_labels", c1, rows=15, what="labels",
                  hide_index=True, column_config=pct)
    c2.markdown("**Most frequent features**")
    display.table(v["top_features"], "data_top_features", c2, rows=15, what="features",
                  hide_index=True, column_config=pct)


def _graph_page():
    v = _graph_view(fp, data)
    s = v["summary"]
    _cards([("Nodes", f"{s['nodes']:,}", None), ("Edges", f"{s['edges']:,}", "undirected"),
            ("Mean degree", f"{s['mean_degree']:.2f}", None),
            ("Classes", "—" if s["classes"] is None else f"{s['classes']:,}",
             None if s["labelled"] is None else f"{s['labelled']:,} labelled nodes")])
    _cards([("Node features", f"{s['features']:,}", None),
            ("Feature non-zeros", f"{s['feature_nnz']:,}", None),
            ("Feature density", f"{s['feature_density']:.3%}", "nnz / (nodes × features)"),
            ("Isolated nodes", f"{s['isolated']:,}", "nodes without an edge")])
    st.markdown(
        f"Most nodes have few links (mean degree {s['mean_degree']:.1f}) while a few hubs have "
        f"many (max {s['max_degree']:,}): on log–log axes the degree distribution falls "
        f"roughly along a line — the same heavy tail as label frequencies.")
    c1, c2 = st.columns(2)
    display.plotly_chart(v["degree_fig"], c1)
    if "class_fig" in v:
        display.plotly_chart(v["class_fig"], c2)
    else:
        c2.info("This graph has no node classes.")
    if "fpp_fig" in v:
        c1, c2 = st.columns(2)
        display.plotly_chart(v["fpp_fig"], c1)
        c2.markdown("**Most frequent features**")
        display.table(v["top_features"], "data_graph_top_features", c2, rows=15,
                      what="features", hide_index=True,
                      column_config={"share of nodes": PERCENT_2, "nodes": display.COUNT})


def _table_page():
    v = _table_view(fp, data)
    s = v["summary"]
    _cards([("Rows", f"{s['rows']:,}", None), ("Columns", f"{s['columns']:,}", None),
            ("Positives", f"{s['positives']:,}", f"rows with {data.label_name} = 1"),
            ("Positive rate", f"{s['positive_rate']:.1%}", None)])
    display.plotly_chart(v["vocab_fig"])
    st.markdown(
        f"The largest column has **{s['largest_vocabulary']:,}** distinct values "
        f"({s['total_vocabulary']:,} over all columns). Big vocabularies (ids, zip codes) make "
        f"one-hot features huge and most values are rare — the **Vocabulary compression** "
        f"page folds them into a few buckets that keep what they say about "
        f"*{md_escape(data.label_name)}*.")
    cols = list(v["vocab"]["column"])
    if cols:
        col = st.selectbox("Top values of column", cols, key=data_key("data_top_values_column", data))
        st.dataframe(_table_top_values(fp, col, data), hide_index=True, width="stretch",
                     column_config={"rows": display.COUNT, "positive rate":
                                    st.column_config.NumberColumn(format="%.1f %%")})


try:
    {"multilabel": _multilabel_page, "graph": _graph_page, "table": _table_page}[data.kind]()
except Exception as exc:  # noqa: BLE001 - the message, never a traceback
    show_error(exc, context="Could not compute the statistics of this dataset")
