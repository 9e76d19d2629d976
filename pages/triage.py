"""Triage page: a bounded battery of the papers' experiments on the current dataset, and a
report (self-contained HTML + JSON) to hand on."""
import functools
import re

import streamlit as st

from featagg_app import experiment_sections, health_ui, runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_app.views import triage as tv

PAGE = "triage"

st.title("Triage")

with st.expander("How it works", expanded=False):
    st.markdown(
        "One click runs the experiments that say most about a dataset, within a **time "
        "budget**, and writes a report you can send to someone who has no dashboard: a "
        "single HTML file (charts included, it opens offline) and a JSON file with every "
        "number in it.\n\n"
        "It opens with a **recommendation** (what to train, on which features, whether to "
        "re-rank, with its validation evidence over 3 seeds) and the data's **health** "
        "alerts, most serious first (duplicates, test rows copying training rows, empty "
        "rows, label errors when the budget allows). Training times are measured honestly: "
        "kernels compiled before the clock, a fit under 0.2 s repeated, and a speed-up "
        "stated only when it is larger than the spread of the repeats.\n\n"
        "* **Multi-label data**: the shape of the label space (how much of it is the "
        "*tail*: the least frequent labels that together carry half of the label "
        "occurrences), KTXMLC on the raw features against KTXMLC on DEFRAG's agglomerated "
        "features at several *d0* (the largest cluster of features summed into one), "
        "one-vs-all against the label trees, and REFRAG (rare-label re-ranking) tuned on "
        "validation rows so that it does not cost more than half a point of P@5.\n"
        "* **Graphs**: BMGUFS against the other feature selections, then its parameter grid "
        "and how it copes with noisy edges.\n"
        "* **Tables**: every column's vocabulary compressed, with the mutual information it "
        "was fitted to next to the one it keeps on rows it never saw.\n\n"
        "**Budget**: every step is estimated first; steps are taken in order of importance "
        "while they fit, and a step that runs far over its estimate is stopped. The report "
        "lists what was left out. Every fit is a run on this session's split (it appears "
        "in Compare), and the report records the split, the seeds and the library versions "
        "so that a second run reproduces its numbers.")

data = state.current_dataset()
if data is None:
    data = state.require_dataset("multilabel")
try:
    split = state.current_split(data)
except ValueError as exc:
    show_error(exc)
    st.stop()
page_ns = state.page_state(PAGE, data)
st.caption(f"**{md_escape(state.dataset_label(data))}** · "
           + md_escape(state.split_caption(split))
           + ("" if split.valid.size or data.kind != "multilabel" else
              " · no validation rows: REFRAG is tuned on rows carved from the training rows "
              "(set a validation share in the sidebar to tune on the split's own)."))

c1, c2 = st.columns([2, 1])
budget = c1.select_slider("Time budget", options=tv.BUDGETS, value=60, key=data_key("tri_budget", data),
                          format_func=lambda s: f"{s} s" if s < 120 else f"{s // 60} min",
                          help="the battery is planned to finish within this time")
c2.write("")
source = state.current_source_id()


def work(progress, cancel, data=data, split=split, budget=budget, source=source):
    from featagg_core.triage.battery import run_triage
    return run_triage(data, budget_s=float(budget), split=split, progress=progress,
                      cancel=cancel, source=f"sample:{source}" if source and
                      source != "upload" else "")


sec = runs_ui.run_section(PAGE, data, split, work, slot="triage", key="tri_run",
                          button="Run the triage", layout="button", container=c2,
                          label=f"Triage of {data.name or 'the dataset'}",
                          estimate_s=float(budget), kind="triage")
if sec.job is not None and sec.job.status == "done":
    page_ns["record"] = sec.job.result.record

record = page_ns.get("record")
if record is None:
    # the data's health first, before anything has run (cheap checks; the triage adds
    # the label errors when its budget allows)
    health_ui.health_section(PAGE, data, split)
    if not sec.running:
        st.info("Pick a budget and press **Run the triage**.")
    st.stop()

advice = (record.get("recommendation") or {}).get("text")
if advice:
    st.subheader("Recommendation")
    st.info(md_escape(advice), icon=":material/lightbulb:")
health = record.get("health")
if health is not None:
    health_ui.show_alerts(health.get("alerts"), why=health.get("why", ""),
                          note=tv.label_errors_note(record))
st.subheader("Verdict")
st.markdown("\n".join(f"- {md_escape(v)}" for v in record["verdict"]))
if record["status"] != "done":
    st.warning("The triage was cancelled: the report holds what finished.")
name = re.sub(r"[^A-Za-z0-9_.-]+", "_", record["dataset"]["name"]) or "dataset"
d1, d2, _ = st.columns([1, 1, 2])
d1.download_button("Download the report (HTML)", functools.partial(tv.html_bytes, record),
                   file_name=f"triage_{name}.html", mime="text/html", key="tri_dl_html",
                   type="primary", on_click="ignore")
d2.download_button("Download every number (JSON)", functools.partial(tv.json_bytes, record),
                   file_name=f"triage_{name}.json", mime="application/json",
                   key="tri_dl_json", on_click="ignore")

figs = tv.experiment_figures(record)
with st.expander("Dataset", expanded=False):
    st.table(tv.stats_frame(record))
    for cap, fig in figs.get("stats", []):
        st.plotly_chart(fig, width="stretch")
        st.caption(cap)
for i, exp in enumerate(record["experiments"]):
    st.subheader(exp["title"])
    for v in exp["verdict"]:
        st.markdown(md_escape(v))
    for cap, fig in figs.get(str(i), []):
        st.plotly_chart(fig, width="stretch")
        st.caption(cap)
    experiment_sections.show_summary_table(exp)
with st.expander("What ran and how long it took", expanded=False):
    st.table(tv.steps_frame(record))
    st.caption(f"Budget {record['budget']['budget_s']:.0f} s, used "
               f"{record['budget']['used_s']:.0f} s. Reproduce from the JSON: "
               f"`{record['reproduce']['command']}`")
