"""Vocabulary compression page: shrink every categorical column of a table to a budget of
buckets while keeping as much information about the binary label as possible (Bateni et
al., ICML 2019), against the DP optimum and the baselines."""
import time

import numpy as np
import streamlit as st

from featagg_app import session
from featagg_app import vocab_view as vv
from featagg_core.artifacts import artifact_bytes
from featagg_core.vocab import CONTIGUOUS

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
        "to the overall P(C) (or the pool's bucket).")

data = session.require_dataset("table")
fp = data.fingerprint
st.caption(f"**{session.md_escape(session.dataset_label(data))}** · upload your own table "
           "(CSV / TSV / parquet with a 0/1 label column) in the sidebar.")

table = data.table
# widgets whose options depend on the dataset are new widgets for each dataset (a browser
# would otherwise send back the previous dataset's choice, which no longer fits)
ds_key = fp[:12]
# ------------------------------------------------------------------ label and columns
label_opts = [f"{data.label_name} (the table's label)"] + vv.binary_columns(table)
c1, c2 = st.columns([1, 2])
label_choice = c1.selectbox("Label column", label_opts, index=0, key=f"vc_label_{ds_key}",
                            help="the binary label C; another two-valued column can stand in")
if label_choice == label_opts[0]:
    labels, label_name, positive = np.asarray(data.labels), data.label_name, "1"
    feature_cols = list(table.columns)
else:
    try:
        labels, positive = vv.labels_from_column(table[label_choice])
    except ValueError as exc:
        session.show_error(exc)
        st.stop()
    label_name = label_choice
    feature_cols = [c for c in table.columns if c != label_choice]
if len(np.unique(labels)) < 2:
    st.error(f"The label {label_name!r} has only one class: there is nothing to keep.")
    st.stop()
columns = c2.multiselect("Columns to compress", feature_cols, default=feature_cols,
                         key=f"vc_columns_{ds_key}")
if not columns:
    st.info("Pick at least one column.")
    st.stop()

# ------------------------------------------------------------------ parameters
p1, p2, p3 = st.columns(3)
m = p1.select_slider("Buckets per column m", options=vv.BUDGET_STEPS, value=10, key="vc_m")
scheme = p2.radio("Budget scheme", ["per column", "global (uniform for baselines)",
                                    "global (MI-proportional for baselines)"],
                  index=1, key="vc_scheme")
with st.expander("More settings", expanded=False):
    a1, a2, a3, a4 = st.columns(4)
    eps_sg = a1.number_input("ε of the stochastic greedy", 1e-4, 0.5, 0.01, format="%.4f",
                             key="vc_eps_sg")
    eps_thr = a2.number_input("ε of the threshold greedy", 1e-3, 0.5, 0.05, format="%.3f",
                              key="vc_eps_thr")
    min_count = a3.number_input("Pool values seen fewer than", 1, 1000, 1, key="vc_min_count",
                                help="1: no pooling (as in the paper)")
    seed = a4.number_input("Random seed", 0, 10_000, 0, key="vc_seed")
    refine = st.checkbox("Nudge each greedy cut to its best place between its neighbours",
                         value=True, key="vc_refine")
    curves_on = st.checkbox("Draw the MI-loss-versus-budget curves (runs every method at "
                            "every budget up to 1,000)", value=True, key="vc_curves")

atoms = vv.atoms_per_column(table, labels, columns, int(min_count))
dp_ok = max(atoms.values()) <= vv.DP_PAGE_LIMIT
method_opts = ["submodular", "threshold"] + (["dp"] if dp_ok else []) + \
    ["bucketing", "frequency", "divisive"]
methods = p3.multiselect("Methods", method_opts,
                         default=["submodular", "bucketing", "frequency", "divisive"] +
                         (["dp"] if dp_ok else []),
                         format_func=lambda k: vv.METHOD_TITLES[k], key="vc_methods")
if not dp_ok:
    p3.caption(f"Exact DP not offered: a column has {max(atoms.values()):,} distinct "
               f"P(C=0|x) levels (limit {vv.DP_PAGE_LIMIT:,}).")
if not methods:
    st.info("Pick at least one method.")
    st.stop()

params = dict(epsilon_sg=float(eps_sg), epsilon_thr=float(eps_thr), min_count=int(min_count),
              random_state=int(seed), refine=bool(refine))
run_key = (fp, label_name, tuple(columns), int(m), scheme, tuple(methods),
           tuple(sorted(params.items())), bool(curves_on))


@st.cache_data(show_spinner=False, max_entries=32)
def _curves(fp_, label_name_, columns_, methods_, budgets_, scheme_, params_, _table, _labels):
    return vv.loss_curves(_table, _labels, list(columns_), list(methods_), list(budgets_),
                          scheme_, dict(params_))


if st.button("Compress", type="primary", key="vc_run"):
    bar = st.progress(0.0, text="Starting…")
    t0 = time.perf_counter()
    try:
        results = vv.run_methods(table, labels, columns, methods, int(m), scheme, params,
                                 progress=lambda f, msg: bar.progress(0.5 * f if curves_on else f,
                                                                      text=msg))
        curves = None
        if curves_on:
            budgets = [b for b in vv.BUDGET_STEPS if b <= min(1000, max(atoms.values()))] or [2]
            bar.progress(0.5, text="MI loss versus budget…")
            curves = _curves(fp, label_name, tuple(columns), tuple(methods), tuple(budgets),
                             scheme, tuple(sorted(params.items())), table, labels)
    except Exception as exc:  # noqa: BLE001 - shown in the page, never a traceback
        session.show_error(exc, context="Compression failed")
        st.stop()
    total = time.perf_counter() - t0
    bar.progress(1.0, text=f"Done in {total:.1f} s")
    main_method = methods[0]
    session.put("vocab_columns", results[main_method])
    first_col = columns[0]
    session.put("vocab", results[main_method].compressors[first_col])
    for meth, cc in results.items():
        summ = vv.summary_table({meth: cc}).iloc[0]
        session.record_run(PAGE, vv.METHOD_TITLES[meth], data,
                           {"m_per_column": int(m), "budget": int(cc.budget), "scheme": scheme,
                            "label": label_name, "columns": len(columns),
                            **vv.method_params(meth, params)},
                           {"MI loss": float(cc.mi_loss), "I(Z;C)": float(summ["I(Z;C) nats"]),
                            "I(X;C)": float(summ["I(X;C) nats"]), "buckets": int(summ["buckets"])},
                           {"fit_s": float(cc.fit_seconds), "total_s": float(cc.seconds)},
                           model_size_bytes=len(vv.mapping_json(cc)))
    st.session_state["vc_result"] = {"key": run_key, "results": results, "curves": curves}

res = st.session_state.get("vc_result")
if res is None or res["key"] != run_key:
    st.info("Set the parameters and press **Compress**.")
    st.stop()
results, curves = res["results"], res["curves"]

# ------------------------------------------------------------------ results
summary = vv.summary_table(results)
main_method = methods[0]
cc_main = results[main_method]
k1, k2, k3, k4 = st.columns(4)
k1.metric("I(X;C) of the columns (nats)", f"{summary['I(X;C) nats'].iloc[0]:.4f}")
k2.metric(f"MI loss — {vv.METHOD_TITLES[main_method]}", f"{cc_main.mi_loss:.2%}")
k3.metric("Buckets used", f"{sum(cc_main.allocation.values()):,}")
k4.metric("Optimisation time", f"{cc_main.fit_seconds:.3f} s")
st.dataframe(summary.style.format({"MI loss": "{:.3%}", "I(X;C) nats": "{:.5f}",
                                   "I(Z;C) nats": "{:.5f}", "optimisation s": "{:.4f}",
                                   "total s": "{:.3f}"}),
             hide_index=True, width="stretch")

g1, g2 = st.columns([3, 2])
if curves is not None and len(curves):
    g1.plotly_chart(vv.loss_curve_figure(curves), width="stretch", key="vc_fig_curves")
g2.plotly_chart(vv.time_figure(summary), width="stretch", key="vc_fig_time")

st.subheader("Sorted P(C = 0 | x) and the split points")
pic_methods = [mm for mm in methods if mm in CONTIGUOUS] or methods
s1, s2 = st.columns(2)
pic_col = s1.selectbox("Column", columns, key=f"vc_pic_col_{ds_key}",
                       format_func=lambda c: f"{c} ({len(results[main_method].compressors[c].vocabulary_):,} values)")
pic_method = s2.selectbox("Method", pic_methods, format_func=lambda k: vv.METHOD_TITLES[k],
                          key="vc_pic_method")
vc = results[pic_method].compressors[pic_col]
st.plotly_chart(vv.split_curve_figure(vc, str(pic_col)), width="stretch", key="vc_fig_split")
st.caption(f"{vc.n_buckets_} buckets over {len(vc.vocabulary_):,} values "
           f"({vc.n_atoms_:,} distinct P(C=0|x) levels); I(Z;C) = {vc.mutual_information_:.5f} "
           f"of I(X;C) = {vc.mutual_information_full_:.5f} nats.")

st.subheader("Per-column budget allocation")
b1, b2 = st.columns([3, 2])
b1.plotly_chart(vv.allocation_figure(results), width="stretch", key="vc_fig_alloc")
b2.dataframe(vv.allocation_table(results), width="stretch")
if scheme != "per column":
    b2.caption("Greedy methods: the paper's merge of per-column marginal gains; baselines: "
               + ("MI-proportional" if "MI" in scheme else "equal") + " shares.")

st.subheader("Download the mapping")
dl_method = st.selectbox("Method", methods, format_func=lambda k: vv.METHOD_TITLES[k],
                         key="vc_dl_method")
cc_dl = results[dl_method]
d1, d2, d3 = st.columns(3)
d1.download_button("Mapping (CSV, all columns)", vv.mapping_csv(cc_dl),
                   file_name=f"vocab_{dl_method}_m{m}.csv", mime="text/csv", key="vc_dl_csv")
d2.download_button("Mapping (JSON, all columns)", vv.mapping_json(cc_dl),
                   file_name=f"vocab_{dl_method}_m{m}.json", mime="application/json",
                   key="vc_dl_json")
d3.download_button(f"Compressor of {pic_col} (featagg artifact)",
                   artifact_bytes(cc_dl.compressors[pic_col], dataset_fingerprint=fp),
                   file_name=f"vocab_{dl_method}_{pic_col}.zip", mime="application/zip",
                   key="vc_dl_artifact")
