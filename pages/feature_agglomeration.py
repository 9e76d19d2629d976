"""Feature agglomeration page: DEFRAG's balanced feature hierarchy, its clusters and error."""
import time

import numpy as np
import streamlit as st

from featagg_app import defrag_view as dv
from featagg_app import session

PAGE = "Feature agglomeration"
STATE = "featagg.defrag_page"   # this page's view state: {fingerprint, result, root}

st.title(PAGE)
data = session.require_dataset("multilabel")
fp = data.fingerprint
st.caption(f"**{session.md_escape(session.dataset_label(data))}**")

with st.expander("How it works", expanded=False):
    st.markdown(
        "**DEFRAG** (Jalan & Kar, IJCAI 2019) shrinks a huge sparse feature space by "
        "*agglomerating* features: similar features are grouped, and each group is replaced "
        "by **one** feature, the sum of its members.\n\n"
        "1. **Represent every feature** as a sparse vector: with **X**, feature *j* is its "
        "column of X (in which points it occurs); with **XY**, it is row *j* of XᵀY (with "
        "which labels it occurs — two words that point to the same tags look alike). "
        "Vectors are scaled to length 1, so similarity is the cosine.\n"
        "2. **Split in two, evenly.** Start with all features at the root. Pick two "
        "features as centres; score every feature by *cos(feature, centre 0) − cos(feature, "
        "centre 1)*; the half with the highest scores goes left, the rest right; each centre "
        "becomes the (normalised) sum of its half; repeat until the split stops improving.\n"
        "3. **Recurse** on both halves until a node holds at most **d0** features. The "
        "leaves are the clusters: about d/d0 of them, all of nearly equal size, and the "
        "whole tree costs O(nnz · log d).\n"
        "4. **Agglomerate**: X (n × d) becomes X·G (n × K), G the 0/1 cluster-membership "
        "matrix. Classifiers then train on K instead of d features.\n\n"
        "**Knobs.** *Representation*: XY uses the labels (better for classification), X does "
        "not need them. *d0*: larger → fewer, coarser clusters (more compression, more "
        "information mixed). *Seed*: which features start as centres. *Sampling* (advanced): "
        "the original code builds the representation from only the 20 % of points with "
        "the most non-zeros and 5 % most frequent labels — faster, slightly worse clusters.\n\n"
        "**Clustering error** is the mean squared distance of the (normalised) feature "
        "vectors to their cluster's mean: 0 when every cluster holds identical features. It "
        "is compared with k-means (same number of clusters, unbalanced) and a random "
        "balanced partition (the floor any method must beat).")

X, Y = data.X, data.Y
d = X.shape[1]
names = data.feature_names

# ------------------------------------------------------------------ controls
c1, c2, c3 = st.columns([1.2, 1, 1])
rep = c1.radio("Representation", ["XY", "X"], horizontal=True, key="fa_rep",
               help="XY: a feature is the labels it co-occurs with; X: the points it occurs in")
d0 = c2.slider("d0 (max features per cluster)", 1, 256, 8, key="fa_d0")
seed = c3.number_input("Seed", 0, 10_000, 0, step=1, key="fa_seed")
with st.expander("Advanced", expanded=False):
    a1, a2, a3, a4 = st.columns(4)
    sp_points = a1.slider("Points used (%)", 5, 100, 100, step=5, key="fa_sp",
                          help="100 = all points; the original code used the 20 % with the "
                               "most non-zeros")
    sp_labels = a2.slider("Labels used (%) (XY)", 1, 100, 100, key="fa_sl",
                          help="100 = all labels; the original code used the 5 % most "
                               "frequent")
    aggregation = a3.radio("Aggregation", ["sum", "avg"], horizontal=True, key="fa_agg",
                           help="sum: a cluster's value is the sum of its features; avg: "
                                "divided by how many of them are non-zero in that point")
    with_kmeans = a4.checkbox("k-means baseline", value=d <= 50_000, key="fa_km",
                              help="MiniBatchKMeans with the same K (slow on big data)")

params = {"d0": int(d0), "representation": rep, "random_state": int(seed),
          "sample_points": sp_points / 100.0, "sample_labels": sp_labels / 100.0,
          "aggregation": aggregation}
run = st.button("Run", type="primary", key="fa_run")


def _fit(params):
    from featagg_core.defrag import Defrag, clustering_error, feature_representation
    timings = {}
    model = Defrag(**params)
    with st.status("Clustering the features…", expanded=True) as status:
        bar = st.progress(0.0, text="building the tree")

        def progress(level, n_levels):
            bar.progress(min(1.0, level / max(n_levels, 1)),
                         text=f"level {level} of {n_levels}")

        t0 = time.perf_counter()
        model.fit(X, Y if rep == "XY" else None, progress=progress)
        timings["fit_s"] = time.perf_counter() - t0
        bar.progress(1.0, text=f"tree built: {model.n_clusters_:,} clusters")
        t0 = time.perf_counter()
        Xa = model.transform(X)
        timings["transform_s"] = time.perf_counter() - t0
        status.update(label="Comparing with baselines…")
        # errors on the full representation (no sampling), the same for every method
        R, _ = feature_representation(X, Y if rep == "XY" else None, rep)
        K = model.n_clusters_
        errors = {"DEFRAG": clustering_error(R, model.labels_, K)}
        if with_kmeans and K > 1:
            t0 = time.perf_counter()
            errors["k-means (MiniBatchKMeans)"] = clustering_error(
                R, dv.kmeans_labels(R, min(K, d), seed=int(seed)))
            timings["kmeans_s"] = time.perf_counter() - t0
        errors["random balanced"] = float(np.mean(
            [clustering_error(R, dv.random_balanced_labels(d, K, s)) for s in range(3)]))
        status.update(label=f"Done: {d:,} features → {K:,} clusters in "
                            f"{timings['fit_s']:.2f} s", state="complete", expanded=False)
    return model, Xa, errors, timings


state = st.session_state.get(STATE)
if state is not None and state.get("fingerprint") != fp:
    state = None
if run:
    try:
        model, Xa, errors, timings = _fit(params)
    except Exception as exc:  # noqa: BLE001 - never a traceback in the browser
        session.show_error(exc, context="DEFRAG failed")
        st.stop()
    red = dv.reduction_summary(X, Xa)
    try:
        from featagg_core.artifacts import artifact_bytes
        blob = artifact_bytes(model, dataset_fingerprint=fp,
                              metrics={"clustering_error": errors["DEFRAG"]})
    except Exception:  # noqa: BLE001 - the artifact module may be missing: CSV/JSON only
        blob = None
    session.put("defrag", model)
    session.record_run(PAGE, f"DEFRAG-{rep}", data, params,
                       {"clusters": model.n_clusters_, "clustering_error": errors["DEFRAG"],
                        **{f"error {k}": v for k, v in errors.items() if k != "DEFRAG"},
                        "features_after": red["K"], "nnz_after": red["nnz_after"]},
                       timings, model_size_bytes=None if blob is None else len(blob))
    state = {"fingerprint": fp, "params": params, "errors": errors, "timings": timings,
             "reduction": red, "artifact": blob, "root": 0,
             "csv": dv.assignment_csv(model, names), "json": dv.clusters_json(model, names)}
    st.session_state[STATE] = state

model = session.get("defrag")
if state is None or model is None or len(model.labels_) != d:
    st.info("Choose the representation and d0, then press **Run**.")
    st.stop()

# ------------------------------------------------------------------ results
red, errors, timings = state["reduction"], state["errors"], state["timings"]
if state["params"] != params:
    st.caption("The results below are for the last run "
               f"({session.md_escape(str(state['params']))}); press **Run** to apply the new "
               "settings.")
m1, m2, m3, m4 = st.columns(4)
m1.metric("Clusters K", f"{model.n_clusters_:,}", border=True,
          help=f"leaves of the tree, each ≤ d0 = {model.d0} features")
m2.metric("Dimensions", f"{red['d']:,} → {red['K']:,}", f"{red['dim_ratio']:.1f}× fewer",
          delta_color="off", delta_arrow="off", border=True)
m3.metric("Non-zeros", f"{dv.short_number(red['nnz_before'])} → "
          f"{dv.short_number(red['nnz_after'])}", f"{red['nnz_ratio']:.2f}× fewer",
          delta_color="off", delta_arrow="off", border=True,
          help=f"stored entries of X: {red['nnz_before']:,} before, {red['nnz_after']:,} after "
               "agglomeration")
m4.metric("Fit time", f"{timings['fit_s']:.2f} s", border=True,
          help="building the representation and the tree")
e1, e2 = st.columns([1, 1])
with e1:
    st.plotly_chart(dv.error_figure(errors), width="stretch")
    best_other = min((v for k, v in errors.items() if k != "DEFRAG"), default=None)
    km = errors.get("k-means (MiniBatchKMeans)")
    st.markdown(
        f"DEFRAG's error **{errors['DEFRAG']:.4f}** vs random balanced "
        f"**{errors['random balanced']:.4f}**"
        + (f" and k-means **{km:.4f}** (k-means took {timings.get('kmeans_s', 0):.1f} s, "
           f"{timings.get('kmeans_s', 0) / max(timings['fit_s'], 1e-9):.0f}× DEFRAG's time; "
           "its clusters are unbalanced)" if km is not None else "") + ".")
with e2:
    st.plotly_chart(dv.size_histogram(model.cluster_sizes_, d0=model.d0), width="stretch")

# ------------------------------------------------------------------ the tree
st.subheader("The hierarchy")
tree = model.tree_
t1, t2, t3 = st.columns([1, 1, 2])
kind = t1.radio("Chart", ["icicle", "sunburst"], horizontal=True, key="fa_kind")
max_lv = max(1, min(dv.MAX_TREE_LEVELS, tree.max_depth))
if max_lv > 1:
    levels = t2.slider("Levels shown", 1, max_lv, min(4, max_lv), key="fa_levels")
else:
    levels = 1
    t2.caption("The tree is a single split level or a single cluster.")
root = int(state.get("root", 0))
if root >= tree.n_nodes:
    root = 0
options = dv.drill_options(tree, root, levels)
picked = t3.selectbox("Drill down to", options, index=options.index(root),
                      format_func=lambda v: dv.node_label(tree, v), key=f"fa_drill_{root}",
                      help="re-draw the tree from this node (pick an ancestor to go back up)")
if picked != root:
    state["root"] = int(picked)
    st.rerun()
st.plotly_chart(dv.tree_figure(tree, root=root, levels=levels, kind=kind,
                               feature_names=names), width="stretch")
st.caption("Block width = number of features. Click a block to zoom in, click the top "
           "block to zoom out; use *Drill down to* for levels below the ones drawn.")

# ------------------------------------------------------------------ cluster inspector
st.subheader("Cluster inspector")
i1, i2 = st.columns([1, 2])
query = i2.text_input("Find the cluster of a feature (name contains…)", key="fa_query")
hits = dv.find_feature(names, query)
default_c = int(model.labels_[hits[0]]) if hits else 0
if query and not hits:
    i2.caption("No feature name contains that text.")
elif hits:
    i2.caption("Matches: " + ", ".join(
        f"{session.md_escape(str(names[j]))} → cluster {int(model.labels_[j])}"
        for j in hits[:8]) + (" …" if len(hits) > 8 else ""))
cluster = i1.number_input("Cluster", 0, model.n_clusters_ - 1, default_c, step=1,
                          key=f"fa_cluster_{default_c}")
k1, k2 = st.columns([3, 2])
k1.markdown(f"**Features of cluster {int(cluster)}**")
k1.dataframe(dv.cluster_table(model, int(cluster), X, names), hide_index=True,
             width="stretch")
k2.markdown("**Labels it occurs with most**")
k2.dataframe(dv.cluster_top_labels(model, int(cluster), X, Y, data.label_names),
             hide_index=True, width="stretch")

# ------------------------------------------------------------------ downloads
st.subheader("Download")
b1, b2, b3 = st.columns(3)
b1.download_button("Cluster assignment (CSV)", state["csv"],
                   file_name="defrag_clusters.csv", mime="text/csv", key="fa_dl_csv")
b2.download_button("Clusters (JSON)", state["json"],
                   file_name="defrag_clusters.json", mime="application/json", key="fa_dl_json")
if state.get("artifact") is not None:
    b3.download_button("Model (featagg artifact)", state["artifact"],
                       file_name="defrag.featagg.zip", mime="application/zip", key="fa_dl_model",
                       help="load with featagg_core.load_artifact")
st.caption("The fitted clustering is kept for this session: the Extreme classification and "
           "Rare labels pages use it.")
