"""Graph feature selection page: BMGUFS (block models of the graph guide which node features
to keep), its block models, convergence, the selected features, and ACC/NMI against the
baselines."""
import time

import numpy as np
import streamlit as st

from featagg_app import bmgufs_view as bv
from featagg_app import session
from featagg_core.artifacts import artifact_bytes
from featagg_core.bmgufs import BMGUFS
from featagg_core.graph_eval import evaluate_selection, known_class_mask

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
        "weights to exactly 0 (larger γ → fewer non-zero weights; if fewer than d stay "
        "non-zero you get a warning and only those). **Iterations**: gradient steps (the "
        "paper uses 200). **d**: how many of the top-weighted features to keep.\n\n"
        "**Judging it** (when the nodes have classes): k-means on the d selected features, "
        "scored by clustering accuracy and NMI against the classes, compared with Laplacian "
        "score, SPEC, variance, random selection and all features — the paper's protocol.")

data = session.require_dataset("graph")
fp = data.fingerprint
st.caption(f"**{session.md_escape(session.dataset_label(data))}** · upload your own graph "
           "(edge list, GraphML, GML, .mat, npz, with a node-feature file) in the sidebar.")

X = getattr(data, "X", None)
if X is None or X.shape[1] == 0:
    st.error("This graph has no node features: BMGUFS selects node features, so upload a "
             "graph with a feature matrix (or a features file next to an edge list).")
    st.stop()
A = data.A
y = None if data.y is None else np.asarray(data.y)
has_classes = y is not None and int(np.unique(y[known_class_mask(y)]).size) >= 2
n_classes = int(np.unique(y[known_class_mask(y)]).size) if has_classes else None
n, f = A.shape[0], X.shape[1]

# ------------------------------------------------------------------ parameters
c1, c2, c3 = st.columns(3)
k = c1.number_input("Blocks k", 2, max(2, min(50, n - 1)),
                    int(min(n_classes or 6, max(2, min(50, n - 1)))), key="gf_k",
                    help="default: the number of node classes")
n_cand = c1.number_input("Candidate block models", 1, 20, 10, key="gf_cand")
beta = c2.slider("β̄ (weight of L_m)", 0.0, 1.0, 0.6, 0.05, key="gf_beta")
gamma = c2.number_input("γ (sparsity)", 0.0, 10.0, 2.0, 0.5, key="gf_gamma")
max_iter = c3.number_input("Iterations", 1, 1000, 200, 10, key="gf_iter")
d = c3.number_input("d (features to keep)", 1, int(f), int(min(64, f)), key="gf_d")
with st.expander("More settings", expanded=False):
    m1, m2, m3 = st.columns(3)
    init = m1.radio("ONMtF restarts start from", ["spectral", "random"], key="gf_init",
                    help="spectral: k-means labels of the regularised spectral embedding "
                         "(lower RRE); random: uniform random memberships (as the paper)")
    eta = m2.number_input("Step size η", 1e-4, 1.0, 1e-2, format="%.4f", key="gf_eta")
    seed = m3.number_input("Random seed", 0, 10_000, 0, key="gf_seed")

params = dict(n_blocks=int(k), beta_bar=float(beta), gamma=float(gamma),
              n_candidates=int(n_cand), max_iter=int(max_iter), random_state=int(seed),
              learning_rate=float(eta), block_init=str(init))
run_key = (fp, tuple(sorted(params.items())))


def _record(model, total_s):
    idx, _ = bv.select_with_message(model, int(d))
    met = {"nnz(r)": int(model.n_nonzero_), "RRE": float(model.block_model_.rre_),
           "L_b": float(model.history_["L_b"][-1]), "L_m": float(model.history_["L_m"][-1]),
           "d": int(len(idx))}
    if has_classes and len(idx):
        ev = evaluate_selection(X, y, idx, n_seeds=3)
        met["ACC"] = ev["acc_mean"]
        met["NMI"] = ev["nmi_mean"]
    blob = artifact_bytes(model, dataset_fingerprint=fp)
    session.put("bmgufs", model)
    session.record_run(PAGE, "BMGUFS", data,
                       {**params, "candidate": int(model.candidate_index_), "d": int(d)},
                       met, {**{f"{k_}_s": v for k_, v in model.timings_.items()},
                             "total_s": total_s},
                       model_size_bytes=len(blob))


def _fit(candidates=None, candidate=None):
    bar = st.progress(0.0, text="Starting…")

    def progress(stage, frac, msg):
        base, span = (0.0, 0.5) if stage == "block models" else (0.5, 0.5)
        if candidates is not None:
            base, span = 0.0, 1.0
        bar.progress(min(1.0, base + span * float(frac)), text=msg)

    model = BMGUFS(**params, candidate=candidate)
    t0 = time.perf_counter()
    model.fit(A, X, y if has_classes else None, candidates=candidates, progress=progress)
    total = time.perf_counter() - t0
    bar.progress(1.0, text=f"Done in {total:.1f} s")
    _record(model, total)
    return model


if st.button("Run BMGUFS", type="primary", key="gf_run"):
    st.session_state.pop("gf_candidate", None)
    try:
        model = _fit()
    except Exception as exc:  # noqa: BLE001 - shown in the page, never a traceback
        session.show_error(exc, context="BMGUFS failed")
        st.stop()
    st.session_state["gf_result"] = {"key": run_key, "model": model}

res = st.session_state.get("gf_result")
if res is None or res["key"] != run_key:
    st.info("Set the parameters and press **Run BMGUFS**.")
    st.stop()
model = res["model"]

# ------------------------------------------------------------------ block models
st.subheader("Block models")
rre = [bm.rre_ for bm in model.candidates_]
best = int(np.argmin(rre))
labels = [f"#{c}: RRE {r:.4f}" + (" (lowest)" if c == best else "") for c, r in enumerate(rre)]
choice = st.selectbox("Block model guiding the selection", list(range(len(rre))),
                      index=int(model.candidate_index_), format_func=lambda c: labels[c],
                      key="gf_candidate")
if int(choice) != int(model.candidate_index_):
    try:
        model = _fit(candidates=model.candidates_, candidate=int(choice))
    except Exception as exc:  # noqa: BLE001
        session.show_error(exc, context="BMGUFS failed")
        st.stop()
    st.session_state["gf_result"] = {"key": run_key, "model": model}

idx, warn = bv.select_with_message(model, int(d))
k1, k2, k3, k4 = st.columns(4)
k1.metric("RRE of the block model", f"{model.block_model_.rre_:.4f}", border=True)
k2.metric(f"Non-zero weights (of {f:,})", f"{model.n_nonzero_:,}", border=True,
          help="features whose weight r is not 0 after the last iteration")
k3.metric("L_b → / L_m →", f"{model.history_['L_b'][-1]:.3f} / {model.history_['L_m'][-1]:.3f}",
          border=True)
k4.metric("Time", f"{sum(model.timings_.values()):.1f} s", border=True,
          help=", ".join(f"{k_}: {v:.2f} s" for k_, v in model.timings_.items()))

left, right = st.columns([3, 2])
left.plotly_chart(bv.rre_figure(model), width="stretch")
right.dataframe(bv.candidates_table(model), hide_index=True, width="stretch")
h1, h2 = st.columns([2, 3])
h1.plotly_chart(bv.image_matrix_figure(model), width="stretch")
h2.plotly_chart(bv.similarity_figure(model), width="stretch")
st.plotly_chart(bv.convergence_figure(model.history_), width="stretch")

# ------------------------------------------------------------------ selected features
st.subheader(f"Top {len(idx)} features")
if warn:
    st.warning(warn)
t1, t2 = st.columns([3, 2])
table = bv.top_features_table(model, idx, data.feature_names, X)
t1.dataframe(table, hide_index=True, width="stretch", height=360)
t2.plotly_chart(bv.weights_figure(model), width="stretch")

# ------------------------------------------------------------------ comparison
st.subheader("ACC / NMI against the baselines")
if not has_classes:
    st.info("The nodes of this graph have no classes, so clustering quality cannot be "
            "scored. Upload a graph with a class file to compare with the baselines.")
else:
    cc1, cc2, cc3 = st.columns([1, 1, 2])
    n_seeds = cc1.number_input("k-means seeds", 1, 20, 3, key="gf_seeds")
    with_ndfs = cc2.checkbox("include NDFS (slower)", key="gf_ndfs")
    cmp_key = (run_key, int(model.candidate_index_), int(n_seeds), bool(with_ndfs))
    if cc3.button("Compare with the baselines", key="gf_compare_btn"):
        bar = st.progress(0.0, text="Scoring the baselines…")
        try:
            cmp = bv.compare_methods(A, X, y, model, bv.DEFAULT_DS, n_seeds=int(n_seeds),
                                     include_ndfs=bool(with_ndfs),
                                     progress=lambda fr, msg: bar.progress(fr, text=msg))
        except Exception as exc:  # noqa: BLE001
            session.show_error(exc, context="The comparison failed")
            st.stop()
        bar.progress(1.0, text="Done")
        st.session_state["gf_compare"] = {"key": cmp_key, "cmp": cmp}
    cres = st.session_state.get("gf_compare")
    if cres is not None and cres["key"] == cmp_key:
        cmp = cres["cmp"]
        st.plotly_chart(bv.acc_nmi_figure(cmp), width="stretch")
        tab_acc, tab_nmi = st.tabs(["ACC table", "NMI table"])
        tab_acc.dataframe(bv.comparison_table(cmp, "acc"), width="stretch")
        tab_nmi.dataframe(bv.comparison_table(cmp, "nmi"), width="stretch")
    else:
        st.caption(f"k-means (k = {n_classes}) on the top d features of each method for "
                   f"d in {', '.join(str(v) for v in bv.DEFAULT_DS if v <= f)}.")

# ------------------------------------------------------------------ the graph
st.subheader("The graph, coloured by block")


@st.cache_data(max_entries=8, show_spinner="Drawing a sample of the graph…")
def _node_fig(fingerprint, run, candidate, _A, _blocks, _y, class_names):
    nodes = bv.node_sample(_A, bv.MAX_NODES_DRAWN, seed=0)
    return bv.node_figure(_A, nodes, _blocks, _y, class_names)


st.plotly_chart(_node_fig(fp, str(run_key), int(model.candidate_index_), A,
                          model.block_model_.labels_, y,
                          None if data.class_names is None else tuple(data.class_names)),
                width="stretch")

# ------------------------------------------------------------------ downloads
dl1, dl2 = st.columns(2)
dl1.download_button("Download the fitted BMGUFS (.zip artifact)",
                    data=artifact_bytes(model, dataset_fingerprint=fp),
                    file_name=f"bmgufs_{data.name or 'graph'}.zip", mime="application/zip",
                    key="gf_download")
dl2.download_button("Download the selected features (.csv)",
                    data=table.to_csv(index=False).encode(),
                    file_name=f"bmgufs_features_{data.name or 'graph'}.csv",
                    mime="text/csv", key="gf_download_csv")
