"""Vocabulary compression page: shrink every categorical column of a table to a budget of
buckets while keeping as much information about the binary label as possible (Bateni et
al., ICML 2019), against the DP optimum and the baselines — one run per method, fitted on
the training rows of the session's split and scored on its test rows."""
import functools

import numpy as np
import streamlit as st

from featagg_app.views import display
from featagg_app import experiment_sections, runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_app.views import vocabulary as vv
from featagg_app.views.compare import CURVE_SUFFIX
from featagg_core.artifacts.store import artifact_bytes
from featagg_core.data import CategoricalData
from featagg_core.experiment import canonical_spec, default_budget
from featagg_core.vocab.compressor import CONTIGUOUS

PAGE = "Vocabulary compression"
st.title(PAGE)

with st.expander("How it works", expanded=False):
    st.markdown(
        "A categorical column X (a user id, a web site, a product code…) can have millions of "
        "distinct values; a model needs one parameter per value. **Vocabulary compression** "
        "maps the values to **m buckets** Z = f(X) so that Z still says as much as possible "
        "about the binary label C, measured by the **mutual information I(Z; C)** (never more "
        "than I(X; C)). The **MI loss** (I(X;C) − I(Z;C)) / I(X;C) is the share of the "
        "information the compression throws away.\n\n"
        "**The key picture.** Sort the values by P(C = 0 | x). An optimal compression only "
        "cuts this sorted list into m contiguous pieces, so it is a set of m − 1 **split "
        "points** (chart below: the dots are the values, the dotted lines the cuts, the "
        "flat segments each bucket's P(C = 0 | z)). Bateni et al. (ICML 2019) show that I(Z; C) "
        "as a function of the set of split points is **monotone submodular** — each extra cut "
        "helps, but less the more cuts there are — so a greedy choice of cuts is provably "
        "within 1 − 1/e ≈ 63% of the best, and in practice much closer. The gain of a cut only "
        "depends on the counts between its two neighbouring cuts, so each gain costs O(1) from "
        "prefix sums plus a fast neighbour lookup, and the whole run is O(n log n).\n\n"
        "**Methods.** *Submodular*: stochastic greedy (each step looks at a random sample of "
        "candidate cuts, (n/m)·ln(1/ε) of them), then each cut is nudged to its best place "
        "between its neighbours. *Threshold greedy*: takes every cut whose gain is above a "
        "threshold that falls by 1 + ε per round (the building block of the paper's "
        "distributed version). *Exact DP*: the true optimum (Kurkoski & Yagi 2014), O(n²m), "
        "offered when every column has at most 2,000 distinct P(C=0|x) levels. Baselines: "
        "*most frequent* (m − 1 most frequent values keep their own bucket, the rest share "
        "one), *equal-mass bucketing* (equal shares of the rows along the sorted list), "
        "*divisive* (Dhillon et al. 2003: k-means with the KL divergence between P(C | x) and "
        "the cluster centres).\n\n"
        "**Knobs.** **Buckets per column m** (log scale). **Budget scheme**: *per column* gives "
        "every column m; *global* shares m × (number of columns) between the columns — the "
        "greedy methods merge the columns' marginal gains and always take the best cut "
        "anywhere (the paper's scheme), the baselines share it equally or in proportion to "
        "each column's I(X; C). **ε** trades speed for accuracy of the greedy methods. "
        "**Pool values seen fewer than** k times: rare values have noisy P(C|x) (a value seen "
        "once sits at 0 or 1); pooling them into one pseudo-value protects a model trained on "
        "the buckets. Values never seen while fitting go to the bucket whose P(C|z) is closest "
        "to the overall P(C) (or the pool's bucket).\n\n"
        "**The label.** C must have two classes. **Label column** picks the table's own "
        "label, another two-valued column, or a numeric column such as a rating: C = 1 when "
        "its value is at least **Positive when at least** (default: the median, moved up to "
        "a value that occurs — MovieLens' rating 1–5 gives rating ≥ 4, a film the user "
        "liked). The command line says the same with `--threshold 4` (or `--positive "
        "VALUE` for one value against the rest).\n\n"
        "**Training and test rows.** Each method is a *run* on the session's split (sidebar): "
        "the value counts P(C | x) come from the training rows only, and I(Z; C), I(X; C) "
        "and the MI loss are measured on the test rows — values the training rows never had "
        "go to the fallback bucket, so a compression that overfits rare values shows it.")

data = state.require_dataset("table")
st.caption(f"**{md_escape(state.dataset_label(data))}** · upload your own table "
           "(CSV / TSV / parquet with a 0/1 label column) in the sidebar.")

table = data.table
# widgets whose options depend on the dataset are keyed by it (featagg_app.keys): new
# widgets for each dataset (a browser would otherwise send back the previous dataset's
# choice, which no longer fits); after another label column, by the derived table
# ------------------------------------------------------------------ label and columns
NUMERIC = " (numeric: set a threshold)"
label_opts = [f"{data.label_name} (the table's label)"] + vv.binary_columns(table) + \
    [f"{c}{NUMERIC}" for c in vv.numeric_columns(table)]
# with large text the label column's name needs the whole width (a selectbox cannot wrap)
c1, c2 = ((st.container(), st.container()) if display.large_text()
          else st.columns([1, 2]))
label_choice = c1.selectbox("Label column", label_opts, index=0, key=data_key("vc_label", data),
                            help="the binary label C; another two-valued column can stand in, "
                                 "or a numeric one (a rating) cut at a threshold (it becomes a "
                                 "dataset of its own, split the same way)")
if label_choice != label_opts[0]:
    # another column as the label: a derived table (its own fingerprint, hence its own
    # runs); the split rows depend only on the row count and the seed, so they are the same
    numeric = label_choice.endswith(NUMERIC)
    col = label_choice[:-len(NUMERIC)] if numeric else label_choice
    cut = None
    if numeric:
        natural = vv.natural_threshold(table[col])
        cut = c1.number_input("Positive when at least", value=natural,
                              key=data_key(f"vc_threshold_{col}", data),
                              help=f"rows with {col} at or above this value are the positive "
                                   "class C = 1, the others C = 0")
        share = float(np.mean(vv._as_numbers(table[col]) >= cut))
        c1.caption(f"C = 1 when **{md_escape(col)} ≥ {cut:g}** ({share:.1%} of the rows). "
                   f"The default, {natural:g}, is the median of {md_escape(col)} moved up to "
                   "a value that occurs: on a 1–5 rating, \"liked it\" (≥ 4) against the "
                   "rest, a natural cut with both classes well filled.")
    derived = state.page_state(PAGE + " (derived tables)").setdefault("tables", {})
    dkey = (data.fingerprint, col, cut)
    if dkey not in derived:
        try:
            if numeric:
                labels_ = vv.labels_from_threshold(table[col], cut)
            else:
                labels_, positive = vv.labels_from_column(table[col])
        except ValueError as exc:
            show_error(exc)
            st.stop()
        derived.clear()
        what = f"{col} ≥ {cut:g}" if numeric else col
        derived[dkey] = CategoricalData(table=table.drop(columns=[col]),
                                        labels=labels_, label_name=str(what),
                                        name=f"{data.name or 'table'} (label: {what})",
                                        source=data.source)
    data = derived[dkey]
    table = data.table
labels, label_name = np.asarray(data.labels), data.label_name
feature_cols = list(table.columns)
split = state.current_split(data)
page_ns = state.page_state(PAGE, data)
st.caption(state.split_caption(split))
if len(np.unique(labels)) < 2:
    st.error(f"The label {label_name!r} has only one class: there is nothing to keep.")
    st.stop()
columns = c2.multiselect("Columns to compress", feature_cols, default=feature_cols,
                         key=data_key("vc_columns", data))
if not columns:
    st.info("Pick at least one column.")
    st.stop()

# ------------------------------------------------------------------ parameters
SCHEMES = ["per column", "global (uniform for baselines)",
           "global (MI-proportional for baselines)"]
p1, p2, p3 = st.columns(3)
if page_ns.get("m_default_for") != (split.split_id, tuple(columns)):
    # a budget that compresses: about half the median number of distinct label rates
    # (default_budget); a budget above a column's levels would be lossless by construction
    m0, m_why = default_budget(data, split, columns)
    page_ns["m_default_for"], page_ns["m_why"] = (split.split_id, tuple(columns)), m_why
    st.session_state[data_key("vc_m", data)] = m0
m = p1.select_slider("Buckets per column m", options=vv.BUDGET_STEPS, key=data_key("vc_m", data),
                     help="default: " + page_ns.get("m_why", ""))
scheme = p2.radio("Budget scheme", SCHEMES, index=1, key=data_key("vc_scheme", data))
with st.expander("More settings", expanded=False):
    a1, a2, a3, a4 = st.columns(4)
    eps_sg = a1.number_input("ε of the stochastic greedy", 1e-4, 0.5, 0.01, format="%.4f",
                             key=data_key("vc_eps_sg", data))
    eps_thr = a2.number_input("ε of the threshold greedy", 1e-3, 0.5, 0.05, format="%.3f",
                              key=data_key("vc_eps_thr", data))
    min_count = a3.number_input("Pool values seen fewer than", 1, 1000, 1, key=data_key("vc_min_count", data),
                                help="1: no pooling (as in the paper)")
    seed = a4.number_input("Random seed", 0, 10_000, 0, key=data_key("vc_seed", data))
    refine = st.checkbox("Nudge each greedy cut to its best place between its neighbours",
                         value=True, key=data_key("vc_refine", data))
    curves_on = st.checkbox("Draw the MI-loss-versus-budget curves (every method refitted "
                            "at every budget up to 1,000, as jobs of their own)", value=True,
                            key=data_key("vc_curves", data))

atoms = vv.atoms_per_column(table, labels, columns, int(min_count))
dp_ok = max(atoms.values()) <= vv.DP_PAGE_LIMIT
method_opts = ["submodular", "threshold"] + (["dp"] if dp_ok else []) + \
    ["bucketing", "frequency", "divisive"]
methods = p3.multiselect("Methods", method_opts,
                         default=["submodular", "bucketing", "frequency", "divisive"] +
                         (["dp"] if dp_ok else []),
                         format_func=lambda k: vv.METHOD_TITLES[k], key=data_key("vc_methods", data))
if not dp_ok:
    p3.caption(f"Exact DP not offered: a column has {max(atoms.values()):,} distinct "
               f"P(C=0|x) levels (limit {vv.DP_PAGE_LIMIT:,}).")
if not methods:
    st.info("Pick at least one method.")
    st.stop()


def method_spec(meth, budget):
    """The vocabulary spec of one method: the paper's greedy merge of the columns' gains
    for the greedy methods under a global budget, equal (or MI-proportional) shares for
    the baselines, every column on its own under "per column"."""
    if scheme == SCHEMES[0]:
        allocation = "per_column"
    elif meth in ("submodular", "threshold"):
        allocation = "greedy"
    else:
        allocation = "uniform" if scheme == SCHEMES[1] else "mi"
    inner = {"method": meth, "budget": int(budget), "columns": list(columns),
             "allocation": allocation, "min_count": int(min_count)}
    if meth == "submodular":
        inner.update(random_state=int(seed), epsilon=float(eps_sg), refine=bool(refine))
    elif meth == "threshold":
        inner.update(epsilon=float(eps_thr), refine=bool(refine))
    elif meth == "dp":
        inner.update(max_dp_values=vv.DP_PAGE_LIMIT)
    return canonical_spec({"vocabulary": inner})


try:
    specs = {meth: method_spec(meth, m) for meth in methods}
except ValueError as exc:
    show_error(exc)
    st.stop()
# the MI-loss curves: every method refitted at every budget, each point a run of its own
# (the method's run at m is its point at m); points fitted before are not fitted again
budgets = [b for b in vv.BUDGET_STEPS if b <= min(1000, max(atoms.values()))] or [2]
curve_specs = {meth: [method_spec(meth, b) for b in budgets] for meth in methods}
to_fit = runs_ui.specs_without_runs(split, [sp_ for meth in methods
                                             for b, sp_ in zip(budgets, curve_specs[meth])
                                             if b != m])
sec = runs_ui.run_section(
    PAGE, data, split, list(specs.values()), slot="compress", key="vc_run", button="Compress",
    label=f"Compress {len(columns)} column(s), m={m}, {len(methods)} method(s)",
    caption=f"for the {len(methods)} method(s) on {split.train.size:,} training rows"
            + (", then the budget curves" if curves_on else "") + ".",
    also=runs_ui.Batch("curves", to_fit if curves_on else [],
                       f"MI loss vs budget, {len(methods)} method(s)", name_suffix=CURVE_SUFFIX),
    empty="Set the parameters and press **Compress**.")
results = dict(zip(specs, sec.runs))

# ------------------------------------------------------------------ results
summary = vv.summary_table(results)
main_method = methods[0]
run_main = results[main_method]
cc_main = run_main.pipeline.vocabulary
st.caption("Runs: " + ", ".join(md_escape(state.run_title(r)) for r in results.values())
           + f" · measured on the {int(run_main.metrics['test']['n_rows']):,} test rows.")
k1, k2, k3, k4 = st.columns(4)
k1.metric("I(X;C) of the columns (nats)", f"{summary['I(X;C) nats'].iloc[0]:.4f}")
k2.metric(f"MI loss — {vv.METHOD_TITLES[main_method]}",
          f"{run_main.metrics['test']['MI loss']:.2%}")
k3.metric("Buckets used", f"{sum(cc_main.allocation.values()):,}")
k4.metric("Optimisation time", f"{run_main.timings.get('vocabulary_s', 0.0):.3f} s")
st.dataframe(summary.style.format({"MI loss": "{:.3%}", "I(X;C) nats": "{:.5f}",
                                   "I(Z;C) nats": "{:.5f}", "optimisation s": "{:.4f}",
                                   "total s": "{:.3f}"}),
             hide_index=True, width="stretch")
st.caption("All measured on the test rows. There, I(X;C) of a column with many rare values "
           "is inflated (a value seen once or twice \"predicts\" its own label), so the "
           "held-out MI loss of id-like columns is much larger than on the training rows "
           "the compression was fitted on (see the picture below): it is the information "
           "that does not carry over to new rows.")

with st.expander(f"Fitted against held-out MI, per column ({vv.METHOD_TITLES[main_method]})",
                 expanded=False):
    experiment_sections.vocabulary_heldout(run_main, data, split)

g1, g2 = st.columns([3, 2])
got = {meth: runs_ui.latest_runs_of(split, curve_specs[meth]) for meth in methods}
got = {meth: vv.curve_from_runs(rs) for meth, rs in got.items() if rs is not None}
if got:
    display.plotly_chart(vv.loss_curve_figure(vv.curves_frame(got)), g1,
                    key="vc_fig_curves")
    if len(got) < len(methods):
        g1.caption("Curves of the other methods are still running (or were not asked for).")
display.plotly_chart(vv.time_figure(summary), g2, key="vc_fig_time")

st.subheader("Sorted P(C = 0 | x) and the split points")
st.caption("From the training rows' counts (what the compression was fitted on).")
pic_methods = [mm for mm in methods if mm in CONTIGUOUS] or methods
s1, s2 = st.columns(2)
pic_col = s1.selectbox("Column", columns, key=data_key("vc_pic_col", data),
                       format_func=lambda c: f"{c} ({len(cc_main.compressors[c].vocabulary_):,} values)")
pic_method = s2.selectbox("Method", pic_methods, format_func=lambda k: vv.METHOD_TITLES[k],
                          key=data_key("vc_pic_method", data))
vc = results[pic_method].pipeline.vocabulary.compressors[pic_col]
display.plotly_chart(vv.split_curve_figure(vc, str(pic_col)), key="vc_fig_split")
st.caption(f"{vc.n_buckets_} buckets over {len(vc.vocabulary_):,} training values "
           f"({vc.n_atoms_:,} distinct P(C=0|x) levels); on the training rows I(Z;C) = "
           f"{vc.mutual_information_:.5f} of I(X;C) = {vc.mutual_information_full_:.5f} nats.")

st.subheader("Per-column budget allocation")
ccs = {meth: r.pipeline.vocabulary for meth, r in results.items()}
b1, b2 = st.columns([3, 2])
display.plotly_chart(vv.allocation_figure(ccs), b1, key="vc_fig_alloc")
b2.dataframe(vv.allocation_table(ccs), width="stretch")
if scheme != SCHEMES[0]:
    b2.caption("Greedy methods: the paper's merge of per-column marginal gains; baselines: "
               + ("MI-proportional" if "MI" in scheme else "equal") + " shares.")

st.subheader("Download the mapping")
dl_method = st.selectbox("Method", methods, format_func=lambda k: vv.METHOD_TITLES[k],
                         key=data_key("vc_dl_method", data))
run_dl = results[dl_method]
cc_dl = run_dl.pipeline.vocabulary
d1, d2, d3 = st.columns(3)
d1.download_button("Mapping (CSV, all columns)", functools.partial(vv.mapping_csv, cc_dl),
                   file_name=f"vocab_{dl_method}_m{m}.csv", mime="text/csv", key="vc_dl_csv",
                   on_click="ignore")
d2.download_button("Mapping (JSON, all columns)", functools.partial(vv.mapping_json, cc_dl),
                   file_name=f"vocab_{dl_method}_m{m}.json", mime="application/json",
                   key="vc_dl_json", on_click="ignore")
d3.download_button("Pipeline (featagg artifact, all columns)",
                   functools.partial(artifact_bytes, run_dl.pipeline,
                                     dataset_fingerprint=data.fingerprint,
                                     metrics=run_dl.metrics.get("test", {})),
                   file_name=f"vocab_{dl_method}_m{m}.fgz", mime="application/zip",
                   key="vc_dl_artifact", on_click="ignore")
