"""Feature agglomeration page: DEFRAG's balanced feature hierarchy, its clusters and error,
against k-means, Ward and random balanced baselines — every fit a run on the session's split."""
import functools

import streamlit as st

from featagg_app.views import agglomeration as dv
from featagg_app.views import display
from featagg_app import experiment_sections, runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_core.runs.estimate import format_seconds
from featagg_core.artifacts.store import artifact_bytes
from featagg_core.experiment import canonical_spec

PAGE = "Feature agglomeration"
BASELINES = {"random_balanced": "random balanced", "kmeans": "k-means (MiniBatchKMeans)",
             "ward": "Ward"}
GUARD_S = 60.0          # a baseline estimated above this runs on a sample unless asked

st.title(PAGE)
data = state.require_dataset("multilabel")
split = state.current_split(data)
page_ns = state.page_state(PAGE, data)
st.caption(f"**{md_escape(state.dataset_label(data))}**")
st.caption(state.split_caption(split))

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
        "**Training rows only.** DEFRAG-XY looks at the labels, so it is fitted on the "
        "*training rows* of the session's split (set in the sidebar): the test rows' labels "
        "never shape the clusters, and the Extreme classification page can reuse this "
        "clustering on the same split without a leak. Every press of **Run** is a new "
        "*run* (kept for this session: Compare and Export list them all).\n\n"
        "**Clustering error** is the mean squared distance of the (normalised) feature "
        "vectors to their cluster's mean, measured on the representation built from the "
        "**test rows**: 0 when every cluster holds identical features. It is compared with "
        "k-means (same number of clusters, unbalanced), Ward's hierarchical clustering and "
        "a random balanced partition (the floor any method must beat), each fitted on the "
        "same training rows as its own run.")

d = data.X.shape[1]
names = data.feature_names


@st.cache_data(max_entries=8, show_spinner=False)
def _train_counts(fingerprint, split_id, _X, _rows):
    """Training points per feature (the tree's words, the inspector's counts): counted
    once per dataset and split, shared by every session."""
    from featagg_app.views.data import column_counts_of_rows
    return column_counts_of_rows(_X, _rows)


# ------------------------------------------------------------------ controls
c1, c2, c3 = st.columns([1.2, 1, 1])
rep = c1.radio("Representation", ["XY", "X"], horizontal=True, key=data_key("fa_rep", data),
               help="XY: a feature is the labels it co-occurs with; X: the points it occurs in")
d0 = c2.slider("d0 (max features per cluster)", 1, 256, 8, key=data_key("fa_d0", data))
seed = c3.number_input("Seed", 0, 10_000, 0, step=1, key=data_key("fa_seed", data))
with st.expander("Advanced", expanded=False):
    a1, a2, a3, a4 = st.columns(4)
    sp_points = a1.slider("Points used (%)", 5, 100, 100, step=5, key=data_key("fa_sp", data),
                          help="100 = all training points; the original code used the 20 % "
                               "with the most non-zeros")
    sp_labels = a2.slider("Labels used (%) (XY)", 1, 100, 100, key=data_key("fa_sl", data),
                          help="100 = all labels; the original code used the 5 % most "
                               "frequent")
    aggregation = a3.radio("Aggregation", ["sum", "avg"], horizontal=True, key=data_key("fa_agg", data),
                           help="sum: a cluster's value is the sum of its features; avg: "
                                "divided by how many of them are non-zero in that point")
    with_kmeans = a4.checkbox("k-means baseline", value=d <= 50_000, key=data_key("fa_km", data),
                              help="MiniBatchKMeans with the same K, run after DEFRAG as its "
                                   "own job (on a sample of features when the full fit would "
                                   "take over a minute)")

try:
    spec = canonical_spec({"defrag": {
        "d0": int(d0), "representation": rep, "random_state": int(seed),
        "sample_points": sp_points / 100.0, "sample_labels": sp_labels / 100.0,
        "aggregation": aggregation}})
except ValueError as exc:
    show_error(exc)
    st.stop()

def _baseline_spec(kind, K, representation, max_features=None):
    inner = {"kind": kind, "n_clusters": int(K), "representation": representation}
    if kind != "ward":
        inner["random_state"] = int(seed)
    if kind != "random_balanced" and max_features is not None:
        inner["max_features"] = int(max_features)
    return {"feature_clustering": inner}


def _baseline_error(kind):
    return f"The {BASELINES[kind]} baseline cannot run"


def _queue_baseline(kind, K, representation):
    """Queue the ``kind`` baseline with no press (behind a new DEFRAG run); its section
    below draws its panel and collects its run."""
    runs_ui.queue_runs(PAGE, data, split, _baseline_spec(kind, K, representation),
                       slot=f"base_{kind}", error=_baseline_error(kind))


experiment_sections.defrag_tradeoff(PAGE, data, split)

sec = runs_ui.run_section(
    PAGE, data, split, spec, slot="defrag", key="fa_run", button="Run",
    caption="on this server (DEFRAG on the training rows, then scoring the test rows).",
    error="DEFRAG cannot run",
    picker=runs_ui.Picker("Show run", "agglomeration", "fa_show_run",
                          help="every DEFRAG run of this session on this dataset, latest "
                               "first"),
    empty="Choose the representation and d0, then press **Run**.")
for new in sec.new:
    # the baselines are their own jobs, queued behind DEFRAG's: random balanced always
    # (it costs nothing), k-means when asked for and cheap enough to run in full
    K_new = int(new.pipeline.defrag.n_clusters_)
    rep_new = new.spec["defrag"]["representation"]
    if K_new > 1:
        _queue_baseline("random_balanced", K_new, rep_new)
        if with_kmeans:
            plan = runs_ui.sampling_plan(data, split,
                                         _baseline_spec("kmeans", K_new, rep_new), GUARD_S)
            if not plan["needs_sampling"]:
                _queue_baseline("kmeans", K_new, rep_new)
run = sec.run

# ------------------------------------------------------------------ results
model = run.pipeline.defrag
K = int(model.n_clusters_)
test = run.metrics["test"]
if run.spec != spec:
    st.caption(f"The results below are for **{md_escape(state.run_title(run))}**; "
               "press **Run** to apply the new settings.")
red = dv.reduction_summary(test, d)
m1, m2, m3, m4 = st.columns(4)
m1.metric("Clusters K", f"{K:,}", border=True,
          help=f"leaves of the tree, each ≤ d0 = {model.d0} features")
m2.metric("Dimensions", f"{dv.short_number(red['d'])} → {dv.short_number(red['K'])}",
          f"{red['dim_ratio']:.1f}× fewer", help=f"{red['d']:,} features → {red['K']:,}",
          delta_color="off", delta_arrow="off", border=True)
m3.metric("Non-zeros (test rows)", f"{dv.short_number(red['nnz_before'])} → "
          f"{dv.short_number(red['nnz_after'])}", f"{red['nnz_ratio']:.2f}× fewer",
          delta_color="off", delta_arrow="off", border=True,
          help=f"stored entries of the test rows: {red['nnz_before']:,} before, "
               f"{red['nnz_after']:,} after agglomeration")
fit_s = run.timings.get("defrag_s", 0.0)
m4.metric("Fit time", f"{fit_s:.2f} s", border=True,
          help="building the representation of the training rows and the tree")

# ------------------------------------------------------------------ baselines
st.subheader("Against the baselines")
st.caption(f"Each baseline clusters the same {d:,} features of the training rows into "
           f"K = {K:,} clusters (representation {run.spec['defrag']['representation']}); all "
           "errors are measured on the test rows.")
rep_shown = run.spec["defrag"]["representation"]


def _baseline_runs():
    """The latest finished baseline run of each kind with the shown run's K and
    representation on this split."""
    out = {}
    for r in state.runs(kind="feature_clustering", fingerprint=data.fingerprint,
                        split_id=split.split_id, status="done"):
        fc = r.spec["feature_clustering"]
        if fc["n_clusters"] == K and fc["representation"] == rep_shown:
            out[fc["kind"]] = r          # the latest of each kind
    return out


def _offer_baseline(kind):
    """The buttons of the ``kind`` baseline (drawn while none of its jobs runs): in full
    when cheap enough, else on a sample of features (k-means: or in full on request).
    Returns the spec of the one pressed, None when none was."""
    if K < 2:
        st.caption("Needs at least two clusters.")
        return None
    try:
        plan = runs_ui.sampling_plan(data, split, _baseline_spec(kind, K, rep_shown), GUARD_S)
    except ValueError as exc:          # e.g. Ward cannot make that many clusters
        st.caption(f"Not offered: {md_escape(exc)}.")
        return None
    done = _baseline_runs().get(kind)
    if done is not None:
        st.caption(f"Done: {md_escape(state.run_title(done))}.")
    if not plan["needs_sampling"]:
        if st.button(f"Run (≈ {format_seconds(plan['seconds'])})", key=f"fa_base_{kind}"):
            return _baseline_spec(kind, K, rep_shown)
        return None
    st.caption(md_escape(plan["message"]))
    pressed = None
    if st.button(f"Run on {plan['max_features_suggested']:,} sampled features",
                 key=f"fa_base_{kind}_sampled"):
        pressed = _baseline_spec(kind, K, rep_shown, plan["max_features_suggested"])
    if plan["seconds_full"] is not None and kind == "kmeans":
        if st.button(f"Run on all {d:,} features (≈ "
                     f"{format_seconds(plan['seconds_full'])})",
                     key=f"fa_base_{kind}_full"):
            pressed = _baseline_spec(kind, K, rep_shown, d)
    return pressed


bcols = st.columns(len(BASELINES))
for col, (kind, title) in zip(bcols, BASELINES.items()):
    with col:
        st.markdown(f"**{title}**")
        # the baseline's job (queued behind DEFRAG's or by its buttons): panel, then buttons
        runs_ui.run_section(PAGE, data, split, None, slot=f"base_{kind}", layout="button",
                            offer=functools.partial(_offer_baseline, kind),
                            error=_baseline_error(kind))
baseline_runs = _baseline_runs()

errors = {"DEFRAG": float(test["clustering_error"])}
titles = {"DEFRAG": state.run_title(run)}
for kind, r in baseline_runs.items():
    errors[BASELINES[kind]] = float(r.metrics["test"]["clustering_error"])
    titles[BASELINES[kind]] = state.run_title(r)
e1, e2 = st.columns([1, 1])
with e1:
    display.plotly_chart(dv.error_figure(errors, titles))
    parts = [f"DEFRAG's error **{errors['DEFRAG']:.4f}**"]
    for kind, r in baseline_runs.items():
        secs = r.timings.get("feature_clustering_s", 0.0)
        extra = ""
        if kind != "random_balanced":
            extra = (f" ({secs:.1f} s, {secs / max(fit_s, 1e-9):.0f}× DEFRAG's time; its "
                     "clusters are unbalanced)" if kind == "kmeans" else f" ({secs:.1f} s)")
        parts.append(f"{BASELINES[kind]} **{errors[BASELINES[kind]]:.4f}**{extra}")
    st.markdown(" vs ".join(parts[:1]) + (" vs " + ", ".join(parts[1:]) if parts[1:] else "")
                + ".")
with e2:
    display.plotly_chart(dv.size_histogram(model.cluster_sizes_, d0=model.d0))

# ------------------------------------------------------------------ the tree
st.subheader("The hierarchy")
tree = model.tree_
counts = _train_counts(data.fingerprint, split.split_id, data.X, split.train)
t1, t2, t3 = st.columns([1, 1, 2])
kind = t1.radio("Chart", ["icicle", "sunburst"], horizontal=True, key="fa_kind")
max_lv = max(1, min(dv.MAX_TREE_LEVELS, tree.max_depth))
if max_lv > 1:
    levels = t2.slider("Levels shown", 1, max_lv, min(4, max_lv), key=data_key("fa_levels", data))
else:
    levels = 1
    t2.caption("The tree is a single split level or a single cluster.")
if page_ns.get("root_run") != run.run_id:
    page_ns["root_run"], page_ns["root"] = run.run_id, 0
root = int(page_ns.get("root", 0))
if root >= tree.n_nodes:
    root = 0
options = dv.drill_options(tree, root, levels)
# labels made now: format_func must not read the session state (AppTest calls it outside
# the script run)
option_labels = {v: dv.node_label(tree, v, counts, names) for v in options}
picked = t3.selectbox("Drill down to", options, index=options.index(root),
                      format_func=option_labels.__getitem__, key=data_key(f"fa_drill_{root}", data),
                      help="re-draw the tree from this node (pick an ancestor to go back up)")
if picked != root:
    page_ns["root"] = int(picked)
    st.rerun()
display.plotly_chart(dv.tree_figure(tree, root=root, levels=levels, kind=kind,
                                    feature_names=names, feature_counts=counts))
st.caption("Each block is named by its most frequent features (in the training rows); "
           "its width is its number of features. Click a block to zoom in, click the top "
           "block to zoom out; use *Drill down to* for levels below the ones drawn.")

# ------------------------------------------------------------------ cluster inspector
st.subheader("Cluster inspector")
i1, i2 = st.columns([1, 2])
query = i2.text_input("Find the cluster of a feature (name contains…)", key=data_key("fa_query", data))
hits = dv.find_feature(names, query)
default_c = int(model.labels_[hits[0]]) if hits else 0
if query and not hits:
    i2.caption("No feature name contains that text.")
elif hits:
    i2.caption("Matches: " + ", ".join(
        f"{md_escape(str(names[j]))} → cluster {int(model.labels_[j])}"
        for j in hits[:8]) + (" …" if len(hits) > 8 else ""))
cluster = i1.number_input("Cluster", 0, K - 1, default_c, step=1,
                          key=data_key(f"fa_cluster_{default_c}", data))
k1, k2 = st.columns([3, 2])
k1.markdown(f"**Features of cluster {int(cluster)}** (points of the training rows)")
display.table(dv.cluster_table(model, int(cluster), feature_names=names, counts=counts),
              f"fa_cluster_table_{int(cluster)}", k1, what="features", hide_index=True,
              column_config={"points": display.COUNT})
k2.markdown("**Labels it occurs with most** (training rows)")
k2.dataframe(dv.cluster_top_labels(model, int(cluster), data.X, data.Y, data.label_names,
                                   rows=split.train),
             hide_index=True, width="stretch")

# ------------------------------------------------------------------ downloads
st.subheader("Download")
b1, b2, b3 = st.columns(3)
b1.download_button("Cluster assignment (CSV)", functools.partial(dv.assignment_csv, model, names),
                   file_name="defrag_clusters.csv", mime="text/csv", key="fa_dl_csv",
                   on_click="ignore")
b2.download_button("Clusters (JSON)", functools.partial(dv.clusters_json, model, names),
                   file_name="defrag_clusters.json", mime="application/json",
                   key="fa_dl_json", on_click="ignore")
b3.download_button("Pipeline (featagg artifact)",
                   functools.partial(artifact_bytes, run.pipeline,
                                     dataset_fingerprint=data.fingerprint,
                                     metrics=run.metrics.get("test", {})),
                   file_name="defrag.fgz", mime="application/zip", key="fa_dl_model",
                   on_click="ignore", help="load with featagg_core.load_artifact")
st.caption("Every DEFRAG run is kept for this session: the Extreme classification page "
           "offers it as *DEFRAG features* on the same split, Export bundles it.")
