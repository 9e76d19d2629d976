"""Compare page: the session's runs side by side, grouped by (dataset, split), with deltas
against a baseline run and one chart per unit."""
import streamlit as st

from featagg_app.views import compare as cv
from featagg_app.views import display
from featagg_app import state

st.title("Compare runs")

with st.expander("How to read this page", expanded=False):
    st.markdown(
        "Every fit you make on the other pages is a **run**: a pipeline (e.g. *DEFRAG d0=8 "
        "→ KTXMLC K=2*) fitted on the **training rows** of a **split**, and scored on that "
        "split's **test rows** (and validation rows, when the split has them). All runs of "
        "this browser session are kept, named after what they fitted (*#3 KTXMLC K=2 T=3 · "
        "DEFRAG d0=8*: the third run of the session).\n\n"
        "* Runs are grouped by **dataset and split**: P@1 on Bibtex's own split and P@1 on "
        "a random 20 % split are different experiments, so they are never drawn on one axis "
        "(several groups get one panel each, and the page says so).\n"
        "* The **baseline** run is the one every other run is measured against: the Δ "
        "columns say how many percentage points (or seconds) a run gains or loses.\n"
        "* **One chart per unit**: percentages (P@k, PSP@k, coverage@k, ACC, MI loss) on "
        "one axis, seconds on another, counts (clusters, non-zeros) on a third.\n"
        "* P@k is the share of a point's top-k predictions that are correct; PSP@k weighs "
        "rare labels more; coverage@k is the share of the test labels predicted correctly "
        "at least once. Train time is the fitting time of the run's steps.")

all_runs = state.runs(status="done")
if not all_runs:
    st.info("No runs yet. Train or fit something on another page (Feature agglomeration, "
            "Extreme classification, Rare labels, Graph features, Vocabulary compression) "
            "and it appears here.")
    st.stop()

df = cv.runs_frame(state.run_record(r) for r in all_runs)
group_names = cv.groups(df)
data = state.current_dataset()
current_group = None
try:
    split = None if data is None else state.current_split(data)
except ValueError:                    # a dataset too small to split has no runs either
    split = None
if split is not None:
    hits = df[(df["dataset_fingerprint"] == data.fingerprint) & (df["split_id"] == split.split_id)]
    if len(hits):
        current_group = hits["group"].iloc[-1]
default_group = current_group or df["group"].iloc[-1]

c1, c2 = st.columns([3, 2])
chosen_groups = c1.multiselect(
    "Dataset and split", group_names, default=[default_group], key="cmp_groups",
    help="runs are compared within one dataset and split; pick several to see them in "
         "separate panels")
if not chosen_groups:
    st.info("Pick a dataset and split.")
    st.stop()
in_groups = df[df["group"].isin(chosen_groups)]
kinds = list(dict.fromkeys(in_groups["kind"].tolist()))
kind = c2.radio("Runs of", kinds, horizontal=True, key="cmp_kind",
                index=kinds.index("classifier") if "classifier" in kinds else 0,
                format_func=lambda k: cv.KIND_TITLES.get(k, k))
pool = in_groups[in_groups["kind"] == kind]
titles = dict(zip(pool["run_id"], pool["run"]))
default_ids = [rid for g in chosen_groups for rid in cv.latest_runs(pool, kind, g)]
# the run and baseline pickers start afresh when the groups change (their defaults follow)
gkey = f"{kind}_{abs(hash(tuple(chosen_groups))) % 10 ** 8}"
run_ids = st.multiselect("Runs", list(titles), default=default_ids, key=f"cmp_runs_{gkey}",
                         format_func=lambda r: titles[r],
                         help="the latest runs are shown to begin with")
if not run_ids:
    st.info("Pick at least one run.")
    st.stop()
if len(chosen_groups) > 1:
    st.warning("These runs are on **different datasets or splits**: their numbers are not "
               "comparable, so each (dataset, split) gets its own panel, and Δ is only "
               "computed within the baseline's group.", icon=":material/call_split:")

# with large text a run's name needs the whole width: a selectbox's value cannot wrap
b1, b2 = ((st.container(), st.container()) if display.large_text()
          else st.columns([2, 3]))
base_default = cv.default_baseline(pool, run_ids)
baseline = b1.selectbox("Baseline (Δ against)", run_ids, format_func=lambda r: titles[r],
                        index=run_ids.index(base_default) if base_default in run_ids else 0,
                        key=f"cmp_base_{gkey}")
all_metrics = cv.metric_columns(pool[pool["run_id"].isin(run_ids)])
metrics = b2.multiselect("Metrics", all_metrics,
                         default=cv.default_metrics(pool[pool["run_id"].isin(run_ids)], kind),
                         key=f"cmp_metrics_{kind}")

for g in chosen_groups:
    ids = [r for r in run_ids if r in set(pool.loc[pool["group"] == g, "run_id"])]
    if not ids:
        continue
    st.subheader(f"{len(ids)} run{'s' if len(ids) != 1 else ''} · {g}")
    base_here = baseline if baseline in ids else None
    if metrics:
        st.table(cv.delta_frame(pool, ids, metrics, base_here))
    if base_here is None and len(chosen_groups) > 1:
        st.caption("The baseline is in another group: no Δ here.")

if metrics:
    for unit, ms in cv.unit_groups(metrics).items():
        display.plotly_chart(cv.unit_figure(pool, run_ids, ms, unit, baseline),
                        key=f"cmp_fig_{unit}")

with st.expander("Trade-off of two numbers", expanded=False):
    if len(all_metrics) >= 2:
        t1, t2 = st.columns(2)
        xd = cv.TRAIN_TIME if cv.TRAIN_TIME in all_metrics else all_metrics[0]
        yd = next((m for m in metrics if m != xd), all_metrics[1])
        x = t1.selectbox("x axis", all_metrics, index=all_metrics.index(xd), key="cmp_x")
        y = t2.selectbox("y axis", all_metrics, index=all_metrics.index(yd), key="cmp_y")
        display.plotly_chart(cv.tradeoff_figure(pool, run_ids, x, y))

with st.expander("Every run of this session (table)", expanded=False):
    st.dataframe(df.drop(columns=["group"]), hide_index=True, width="stretch")
    st.download_button("Download the table (CSV)", cv.to_csv(df), file_name="featagg_runs.csv",
                       mime="text/csv", key="runs_csv", on_click="ignore")
