"""Compare page: every run of this browser session in one sortable table and in charts."""
import streamlit as st

from featagg_app import compare_view as cv
from featagg_app import session

st.title("Compare runs")

with st.expander("How to read this page", expanded=False):
    st.markdown(
        "Every run you make on the other pages — a DEFRAG clustering, a classifier, a "
        "feature selection, a vocabulary compression — is recorded here with its dataset, "
        "parameters, metrics, timings and model size (for this browser session only).\n\n"
        "* **Table**: click a column header to sort; download it as CSV.\n"
        "* **Grouped bars**: the chosen metrics side by side for each run.\n"
        "* **Trade-off**: one number against another, e.g. P@1 against training time (is "
        "the extra accuracy worth the minutes?), MI loss against the budget, clustering "
        "accuracy against the number of selected features.\n\n"
        "Runs on different datasets are never drawn on the same axes: each dataset gets its "
        "own panel, because P@1 on Bibtex and on Delicious are not comparable numbers.")

all_runs = session.runs()
if not all_runs:
    st.info("No runs yet. Train or fit something on another page (Feature agglomeration, "
            "Extreme classification, Rare labels, Graph features, Vocabulary compression) "
            "and it appears here.")
    st.stop()

df = cv.runs_frame(all_runs)
datasets = sorted(df["dataset"].dropna().unique().tolist())
methods = sorted(df["method"].dropna().unique().tolist())
current = session.current_dataset()
current_name = getattr(current, "name", None)
# default: the session's current dataset if it has runs, else the latest run's dataset
default_ds = [current_name] if current_name in datasets else [all_runs[-1]["dataset"]]

c1, c2 = st.columns(2)
chosen_ds = c1.multiselect("Datasets", datasets, default=default_ds,
                           help="Runs on several datasets are drawn in one panel per dataset.")
chosen_methods = c2.multiselect("Methods", methods, default=methods)
view = cv.filter_runs(df, chosen_ds, chosen_methods)

st.subheader(f"{len(view)} of {len(df)} runs")
st.dataframe(view, hide_index=True, width="stretch")
st.download_button("Download the table (CSV)", cv.to_csv(view), file_name="featagg_runs.csv",
                   mime="text/csv", key="runs_csv")

if view.empty:
    st.warning("No run matches the filters.")
    st.stop()
if view["dataset"].nunique() > 1:
    st.caption("Several datasets are selected: the charts show one panel per dataset.")

metric_cols = cv.metric_columns(view)
if metric_cols:
    st.subheader("Metrics per run")
    picked = st.multiselect("Metrics", metric_cols, default=metric_cols[:6])
    if picked:
        st.plotly_chart(cv.grouped_bar_figure(view, picked), width="stretch")

numeric = cv.numeric_columns(view)
if len(numeric) >= 2:
    st.subheader("Trade-off")
    dx, dy = cv.default_tradeoff(view)
    c1, c2 = st.columns(2)
    x = c1.selectbox("x axis", numeric, index=numeric.index(dx) if dx in numeric else 0)
    y = c2.selectbox("y axis", numeric, index=numeric.index(dy) if dy in numeric else 1)
    st.plotly_chart(cv.tradeoff_figure(view, x, y), width="stretch")
