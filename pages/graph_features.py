"""Graph feature selection page: BMGUFS (block models of the graph guide which node features
to keep), its block models, convergence, the selected features, and ACC/NMI against the
baselines — each fit a run on the training nodes of the session's split."""
import functools

import numpy as np
import streamlit as st

from featagg_app.views import graph_features as bv
from featagg_app.views import display
from featagg_app import experiment_sections, runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_core.artifacts.store import artifact_bytes
from featagg_core.experiment import (
    DEFAULT_DS,
    SELECTION_BASELINES,
    canonical_spec,
    feature_selection_comparison,
    split_rows,
)
from featagg_core.graph.evaluation import known_class_mask

PAGE = "Graph feature selection"
st.title(PAGE)

with st.expander("How it works", expanded=False):
    st.markdown(
        "**BMGUFS** (Bai, Nguyen & Davidson, KDD 2020) picks the node features that best "
        "explain the *structure* of the graph, in two stages.\n\n"
        "1. **Block model.** The graph's adjacency matrix is factorised as "
        "A ≈ F M Fᵀ (orthogonal non-negative tri-factorisation, Ding et al. 2006): every "
        "node goes to one of **k blocks** (F, the row's largest entry) and the **image "
        "matrix M** holds the edge density between every pair of blocks — blocks are "
        "communities when M is heavy on its diagonal, but can also be e.g. hubs and their "
        "followers. Several random restarts (**candidates**) are fitted and the one with "
        "the lowest **relative reconstruction error** RRE = ‖A − FMFᵀ‖/‖A‖ is used (you "
        "can pick another).\n"
        "2. **Feature weights.** Every feature gets a weight rⱼ ≥ 0 (‖r‖ = 1). The weighted "
        "features induce a similarity graph Y diag(r) Yᵀ between nodes; BMGUFS moves r by "
        "projected gradient steps so that this graph\n"
        "   - looks the same within each block as the block's average (**L_b**, structural "
        "equivalence), and\n"
        "   - reproduces M at block level (**L_m**, a KL divergence between the rows of M "
        "and of the block-level similarity of the features).\n\n"
        "**Knobs.** **β̄** weighs L_m against L_b (0: only L_b, 1: only L_m). **γ** pushes "
        "weights to exactly 0 (larger γ → fewer non-zero weights; when fewer than d stay "
        "non-zero, γ is lowered down the paper's grid 3, 2, 1, then 0.5, 0.25, 0, until "
        "d do — as the library's `BMGUFS.select(d)` does — and if even γ = 0 keeps "
        "fewer, the rest are filled by score with a warning). **Iterations**: gradient "
        "steps (the "
        "paper uses 200). **d**: how many of the top-weighted features to keep.\n\n"
        "**Training and test nodes.** The split in the sidebar holds some nodes out: "
        "BMGUFS and every baseline are fitted on the graph *induced by the training nodes* "
        "(their features, the edges among them), and judged on the **test nodes** — so no "
        "score comes from nodes the selection saw (the paper fits and judges on all "
        "nodes, so its numbers are not directly comparable). Every press of **Run** is a "
        "new run of this session.\n\n"
        "**Judging it** (when the nodes have classes): k-means on the d selected features "
        "of the test nodes, scored by clustering accuracy and NMI against their classes, "
        "compared with Laplacian score, SPEC, variance, random selection and all features "
        "— the paper's protocol.")

data = state.require_dataset("graph")
split = state.current_split(data)
page_ns = state.page_state(PAGE, data)
st.caption(f"**{md_escape(state.dataset_label(data))}** · upload your own graph "
           "(edge list, GraphML, GML, .mat, npz, with a node-feature file) in the sidebar.")
st.caption(state.split_caption(split))

X = getattr(data, "X", None)
if X is None or X.shape[1] == 0:
    st.error("This graph has no node features: BMGUFS selects node features, so upload a "
             "graph with a feature matrix (or a features file next to an edge list).")
    st.stop()
y = None if data.y is None else np.asarray(data.y)
has_classes = y is not None and int(np.unique(y[known_class_mask(y)]).size) >= 2
n_classes = int(np.unique(y[known_class_mask(y)]).size) if has_classes else None
n, f = data.A.shape[0], X.shape[1]
n_train = split.train.size

# ------------------------------------------------------------------ parameters
c1, c2, c3 = st.columns(3)
k = c1.number_input("Blocks k", 2, max(2, min(50, n_train - 1)),
                    int(min(n_classes or 6, max(2, min(50, n_train - 1)))), key=data_key("gf_k", data),
                    help="default: the number of node classes")
k_auto = c1.checkbox("k from the data", value=False, key=data_key("gf_k_auto", data),
                     help="the number of node classes when the nodes have them, else the "
                          "eigengap rule when the eigenvalues of the normalised adjacency show a "
                          "clear gap (k = 2..20), else the k where the modularity of the "
                          "spectral partitions levels off; the run says which k it took")
n_cand = c1.number_input("Candidate block models", 1, 20, 10, key=data_key("gf_cand", data))
beta = c2.slider("β̄ (weight of L_m)", 0.0, 1.0, 0.6, 0.05, key=data_key("gf_beta", data))
gamma = c2.number_input("γ (sparsity)", 0.0, 10.0, 2.0, 0.5, key=data_key("gf_gamma", data))
max_iter = c3.number_input("Iterations", 1, 1000, 200, 10, key=data_key("gf_iter", data))
d = c3.number_input("d (features to keep)", 1, int(f), int(min(64, f)), key=data_key("gf_d", data))
with st.expander("More settings", expanded=False):
    m1, m2, m3 = st.columns(3)
    init = m1.radio("ONMtF restarts start from", ["spectral", "random"], key=data_key("gf_init", data),
                    help="spectral: k-means labels of the regularised spectral embedding "
                         "(lower RRE); random: uniform random memberships (as the paper)")
    eta = m2.number_input("Step size η", 1e-4, 1.0, 1e-2, format="%.4f", key=data_key("gf_eta", data))
    seed = m3.number_input("Random seed", 0, 10_000, 0, key=data_key("gf_seed", data))


def _spec(candidate=None):
    return canonical_spec({"feature_selection": {
        "kind": "bmgufs", "d": int(d), "n_blocks": None if k_auto else int(k),
        "keep_d": True, "beta_bar": float(beta),
        "gamma": float(gamma), "n_candidates": int(n_cand), "max_iter": int(max_iter),
        "random_state": int(seed), "learning_rate": float(eta), "block_init": str(init),
        "candidate": candidate}})


try:
    spec = _spec()
except ValueError as exc:
    show_error(exc)
    st.stop()


def _is_bmgufs(run):
    return run.spec["feature_selection"]["kind"] == "bmgufs"


sec = runs_ui.run_section(
    PAGE, data, split, spec, slot="bmgufs", key="gf_run", button="Run BMGUFS",
    caption=f"({n_train:,} training nodes, {f:,} features).", error="BMGUFS cannot run",
    picker=runs_ui.Picker("Show run", "feature_selection", "gf_show_run", where=_is_bmgufs,
                          help="the BMGUFS runs of this session on this graph"),
    empty="Set the parameters and press **Run BMGUFS**.")
run = sec.run
model = run.pipeline.selector
train = split_rows(data, split, "train")
test = run.metrics["test"]
base_spec = dict(run.spec["feature_selection"], candidate=None)
if base_spec != spec["feature_selection"]:
    st.caption(f"Shown: **{md_escape(state.run_title(run))}**; press **Run BMGUFS** "
               "to apply the new settings.")

# ------------------------------------------------------------------ block models
st.subheader("Block models")
rre = [bm.rre_ for bm in model.candidates_]
best = int(np.argmin(rre))
labels = [f"#{c}: RRE {r:.4f}" + (" (lowest)" if c == best else "") for c, r in enumerate(rre)]
if page_ns.get("candidate_run") != run.run_id:
    page_ns["candidate_run"] = run.run_id
    st.session_state[data_key("gf_candidate", data)] = int(model.candidate_index_)
choice = st.selectbox("Block model guiding the selection", list(range(len(rre))),
                      format_func=lambda c: labels[c], key=data_key("gf_candidate", data),
                      help="another candidate is a new run (the block models are fitted "
                           "again on the same training nodes, the same seed)")
if int(choice) != int(model.candidate_index_) and not sec.running \
        and page_ns.get("candidate_asked") != (run.run_id, int(choice)):
    # another block model: a new run in the Run's slot (its panel shows above)
    page_ns["candidate_asked"] = (run.run_id, int(choice))
    runs_ui.queue_runs(
        PAGE, data, split,
        {"feature_selection": dict(run.spec["feature_selection"], candidate=int(choice))},
        slot="bmgufs", error="BMGUFS cannot run", rerun=True)

st.caption("Blocks: " + md_escape(model.n_blocks_rule_)
           + f" · γ used {model.gamma_:g}"
           + (f" (tried {', '.join(f'{g:g} → {z} non-zero' for g, z in model.gamma_path_)})"
              if len(model.gamma_path_) > 1 else ""))
if model.fit_warning_:
    st.warning(md_escape(model.fit_warning_[0].upper() + model.fit_warning_[1:]),
               icon="⚠️")
k1, k2, k3, k4 = st.columns(4)
k1.metric("RRE of the block model", f"{model.block_model_.rre_:.4f}", border=True)
k2.metric(f"Non-zero weights (of {f:,})", f"{model.n_nonzero_:,}", border=True,
          help="features whose weight r is not 0 after the last iteration")
k3.metric("L_b → / L_m →", f"{model.history_['L_b'][-1]:.3f} / {model.history_['L_m'][-1]:.3f}",
          border=True)
k4.metric("Time", f"{run.timings.get('selection_s', 0.0):.1f} s", border=True,
          help=", ".join(f"{k_}: {v:.2f} s" for k_, v in model.timings_.items()))
if has_classes and "ACC" in test:
    st.caption(f"k-means (k = classes) on the {int(test['d'])} selected features of the "
               f"{int(test['n_rows']):,} test nodes: ACC **{100 * test['ACC']:.1f} %**, "
               f"NMI **{100 * test['NMI']:.1f} %**.")

left, right = st.columns([3, 2])
display.plotly_chart(bv.rre_figure(model), left)
right.dataframe(bv.candidates_table(model), hide_index=True, width="stretch")
h1, h2 = st.columns([2, 3])
display.plotly_chart(bv.image_matrix_figure(model), h1)
display.plotly_chart(bv.similarity_figure(model), h2)
display.plotly_chart(bv.convergence_figure(model.history_))

# ------------------------------------------------------------------ selected features
idx = np.asarray(run.pipeline.selected_, np.int64)
st.subheader(f"Top {len(idx)} features")
# the run's note repeats the block-fit warning shown above the block models: say the rest
notes = run.message or ""
if model.fit_warning_:
    notes = notes.replace("BMGUFS: " + model.fit_warning_, "").strip("; ")
if notes:
    st.warning(notes)
t1, t2 = st.columns([3, 2])
table = bv.top_features_table(model, idx, data.feature_names, train.X)
t1.dataframe(table, hide_index=True, width="stretch", height=360,
             column_config={"nodes with it": display.COUNT})
display.plotly_chart(bv.weights_figure(model), t2)

# ------------------------------------------------------------------ comparison
st.subheader("ACC / NMI against the baselines")
if not has_classes:
    st.info("The nodes of this graph have no classes, so clustering quality cannot be "
            "scored. Upload a graph with a class file to compare with the baselines.")
else:
    cc1, cc2, cc3 = st.columns([1, 1, 2])
    n_seeds = cc1.number_input("k-means seeds", 1, 20, 3, key=data_key("gf_seeds", data))
    with_ndfs = cc2.checkbox("include NDFS (slower)", key=data_key("gf_ndfs", data))
    methods = dict(SELECTION_BASELINES)
    if with_ndfs:
        methods["NDFS (graph)"] = {"kind": "ndfs", "affinity": "graph"}
    cmp_key = (run.run_id, int(n_seeds), bool(with_ndfs))
    cmp = runs_ui.page_result(
        PAGE, "compare", cmp_key, f"Baselines for {run.name}",
        lambda progress, cancel: feature_selection_comparison(
            data, split, base=run, methods=methods, n_seeds=int(n_seeds),
            progress=progress, cancel=cancel),
        button="Compare with the baselines", button_key="gf_compare_btn", container=cc3)
    if cmp is not None:
        display.plotly_chart(bv.acc_nmi_figure(cmp))
        tab_acc, tab_nmi = st.tabs(["ACC table", "NMI table"])
        tab_acc.dataframe(bv.comparison_table(cmp, "acc"), width="stretch")
        tab_nmi.dataframe(bv.comparison_table(cmp, "nmi"), width="stretch")
    else:
        st.caption(f"Every baseline is fitted on the training nodes; k-means (k = "
                   f"{n_classes}) on the top d features of the test nodes, for d in "
                   f"{', '.join(str(v) for v in DEFAULT_DS if v <= f)}.")

experiment_sections.bmgufs_protocol(PAGE, data, split, bmgufs={
    k_: v for k_, v in spec["feature_selection"].items()
    if k_ in ("n_blocks", "beta_bar", "max_iter", "random_state", "learning_rate",
              "block_init")})

# ------------------------------------------------------------------ the graph
st.subheader("The training graph, coloured by block")


@st.cache_data(max_entries=8, show_spinner="Drawing a sample of the graph…")
def _node_fig(fingerprint, split_id, run_id, _A, _blocks, _y, class_names):
    nodes = bv.node_sample(_A, bv.MAX_NODES_DRAWN, seed=0)
    return bv.node_figure(_A, nodes, _blocks, _y, class_names)


display.plotly_chart(_node_fig(data.fingerprint, split.split_id, run.run_id, train.A,
                          model.block_model_.labels_, train.y,
                          None if data.class_names is None else tuple(data.class_names)))
st.caption(f"The {train.A.shape[0]:,} training nodes the block model was fitted on.")

# ------------------------------------------------------------------ downloads
dl1, dl2 = st.columns(2)
dl1.download_button("Download the fitted pipeline (.fgz artifact)",
                    data=functools.partial(artifact_bytes, run.pipeline,
                                           dataset_fingerprint=data.fingerprint, metrics=test),
                    file_name=f"bmgufs_{data.name or 'graph'}.fgz", mime="application/zip",
                    key="gf_download", on_click="ignore")
dl2.download_button("Download the selected features (.csv)",
                    data=table.to_csv(index=False).encode(),
                    file_name=f"bmgufs_features_{data.name or 'graph'}.csv",
                    mime="text/csv", key="gf_download_csv", on_click="ignore")
