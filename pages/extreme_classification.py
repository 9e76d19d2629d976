"""Extreme classification page: train KTXMLC (or one-vs-all) on raw or DEFRAG features,
with the elbow plot for K, progress per tree level / node batch, metrics, the label tree."""
import time

import numpy as np
import scipy.sparse as sp
import streamlit as st

from featagg_app import session
from featagg_app import xmlc_view as xv
from featagg_core import metrics
from featagg_core.artifacts import artifact_bytes
from featagg_core.ktxmlc import KTXMLC, OneVsAll, elbow_curve

PAGE = "Extreme classification"
st.title(PAGE)

with st.expander("How it works", expanded=False):
    st.markdown(
        "**KTXMLC** (Prajapati & Thakkar 2021) learns to tag a point with a few of "
        "thousands of labels without scoring every label. It builds **label trees**: every "
        "label is described by the (normalised) average of the feature vectors of its "
        "training points; labels are clustered into **K** groups by k-means‖ seeding and "
        "spherical k-means, each group again into K, until a group has at most the **leaf "
        "size** labels or the tree reaches its **depth**. Every node holds one linear "
        "classifier per child (squared-hinge SVM, cost **C**, solved by dual coordinate "
        "descent as liblinear does), trained only on the points that reach that node.\n\n"
        "To predict, a point walks down each tree keeping the **beam width** most promising "
        "nodes per level; a label's score multiplies the probabilities along its path, and "
        "the **trees** (different random seeds) are averaged.\n\n"
        "- **K = 2** gives Parabel-like balanced binary trees; a larger K (Bonsai-like) gives "
        "shallower trees — the **elbow** plot shows where adding clusters stops paying off.\n"
        "- **One-vs-all** trains every label against all points: exact but slower for many "
        "labels — what the tree trades away.\n"
        "- **Agglomerated features** use the DEFRAG clustering from the Feature agglomeration "
        "page (or one fitted here): fewer features, smaller and faster models.\n"
        "- Metrics: P@k (precision of the top k), nDCG@k, their propensity-scored versions "
        "PSP@k / PSnDCG@k (rare labels count more), and coverage@k (share of the test set's "
        "labels predicted correctly at least once).")

data = session.require_dataset("multilabel")
fp = data.fingerprint
st.caption(f"**{session.md_escape(session.dataset_label(data))}**")

# ------------------------------------------------------------------ split and features
has_split = data.X_test is not None and data.Y_test is not None and data.X_test.shape[0] > 0
c1, c2, c3 = st.columns(3)
split_options = (["dataset's train/test split"] if has_split else []) + ["random split"]
split = c1.radio("Split", split_options, key="xmlc_split")
test_frac = 0.25
if split == "random split":
    test_frac = c1.slider("Test fraction", 0.1, 0.5, 0.25, 0.05, key="xmlc_test_frac")
features = c2.radio("Features", ["raw", "agglomerated (DEFRAG)"], key="xmlc_features")
model_kind = c3.radio("Model", ["KTXMLC (label trees)", "One-vs-all"], key="xmlc_model")


@st.cache_data(max_entries=8, show_spinner=False)
def _split(fingerprint, how, frac, _data):
    if how == "random split":
        tr, te = xv.random_split(_data.X.shape[0], frac, seed=0)
        return (_data.X[tr], _data.Y[tr], _data.X[te], _data.Y[te])
    return (_data.X, _data.Y, _data.X_test, _data.Y_test)


Xtr, Ytr, Xte, Yte = _split(fp, split, test_frac, data)
Ytr = sp.csr_matrix(Ytr)
Yte = sp.csr_matrix(Yte)


@st.cache_resource(max_entries=4, show_spinner="Fitting DEFRAG on the training split…")
def _fit_defrag(fingerprint, how, frac, d0, _X, _Y):
    from featagg_core.defrag import Defrag

    return Defrag(d0=d0, representation="XY", random_state=0).fit(_X, _Y)


defrag = None
if features.startswith("agglomerated"):
    stored = session.get("defrag")
    if stored is not None and getattr(stored, "labels_", None) is not None \
            and len(stored.labels_) == Xtr.shape[1]:
        defrag = stored
        st.info(f"Using the DEFRAG clustering from this session: {Xtr.shape[1]:,} features → "
                f"{int(stored.n_clusters_):,} clusters.")
    else:
        d0 = st.number_input("DEFRAG leaf size d0 (features per cluster)", 2, 64, 8,
                             key="xmlc_d0")
        try:
            defrag = _fit_defrag(fp, split, test_frac, int(d0), Xtr, Ytr)
        except Exception as exc:  # noqa: BLE001
            session.show_error(exc, context="DEFRAG failed")
            st.stop()
        st.info(f"No DEFRAG clustering in this session yet (Feature agglomeration page): "
                f"fitted one here, {Xtr.shape[1]:,} features → {int(defrag.n_clusters_):,}.")
    Xtr_m, Xte_m = defrag.transform(Xtr), defrag.transform(Xte)
else:
    Xtr_m, Xte_m = Xtr, Xte

# ------------------------------------------------------------------ parameters
L = Ytr.shape[1]
is_tree = model_kind.startswith("KTXMLC")
if is_tree:
    p1, p2, p3 = st.columns(3)
    K = p1.number_input("K (children per node)", 2, max(2, min(L, 1000)), 2, key="xmlc_K")
    n_trees = p1.number_input("Trees", 1, 10, 3, key="xmlc_trees")
    depth = p2.number_input("Max depth", 1, 30, 20, key="xmlc_depth")
    leaf = p2.number_input("Leaf size (max labels per leaf)", 1, max(1, L), min(100, L),
                           key="xmlc_leaf")
    C = p3.number_input("C (SVM cost)", 0.01, 100.0, 1.0, key="xmlc_C", format="%.2f")
    beam = p3.number_input("Beam width", 1, 200, 10, key="xmlc_beam")
    params = dict(n_clusters=int(K), n_trees=int(n_trees), max_depth=int(depth),
                  max_leaf_labels=int(leaf), C=float(C), beam_width=int(beam), random_state=0)

    with st.expander("Elbow plot: which K?", expanded=False):
        st.caption("Within-cluster sum of squares of the label vectors when the root is split "
                   "into K clusters; the star marks the elbow (largest distance to the chord).")

        @st.cache_data(max_entries=8, show_spinner="Clustering labels for K = 2 … 64…")
        def _elbow(fingerprint, how, frac, feats, _X, _Y):
            ks = [k for k in (2, 4, 8, 16, 32, 64) if k < _Y.shape[1]] or [2]
            return elbow_curve(_X, _Y, ks=ks)

        if st.toggle("Compute the elbow curve", key="xmlc_elbow_on"):
            try:
                el = _elbow(fp, split, test_frac, features, Xtr_m, Ytr)
                st.plotly_chart(xv.elbow_figure(el), width="stretch")
                st.write(f"Elbow at **K = {el.elbow}**.")
            except Exception as exc:  # noqa: BLE001
                session.show_error(exc, context="The elbow computation failed")
else:
    p1, _ = st.columns([1, 2])
    C = p1.number_input("C (SVM cost)", 0.01, 100.0, 1.0, key="xmlc_C_ova", format="%.2f")
    params = dict(C=float(C), random_state=0)
    if L > 5000:
        st.warning(f"One-vs-all trains {L:,} classifiers on all points: this will be slow.")

# ------------------------------------------------------------------ train
run_key = (fp, split, test_frac, features, model_kind, tuple(sorted(params.items())),
           None if defrag is None else id(defrag))
if st.button("Train", type="primary", key="xmlc_train"):
    bar = st.progress(0.0, text="Starting…")

    def progress(frac, msg):
        bar.progress(min(1.0, max(0.0, float(frac))), text=msg)

    model = KTXMLC(**params) if is_tree else OneVsAll(**params)
    try:
        t0 = time.perf_counter()
        model.fit(Xtr_m, Ytr, progress=progress)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        S = model.predict_scores(Xte_m, k=5)
        pred_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001
        session.show_error(exc, context="Training failed")
        st.stop()
    bar.progress(1.0, text=f"Trained in {train_s:.1f} s")
    ip = metrics.inverse_propensity(Ytr)
    table = xv.metrics_table(Yte, S, ip)
    session.put("ktxmlc" if is_tree else "ova", model)
    method = ("KTXMLC" if is_tree else "OneVsAll") + (" + DEFRAG" if defrag is not None else "")
    session.record_run(PAGE, method, data,
                       {**params, "features": features, "split": split,
                        "n_features": int(Xtr_m.shape[1])},
                       xv.flat_metrics(table),
                       {"train_s": train_s, "predict_s": pred_s,
                        "predict_ms_per_point": 1000 * pred_s / max(1, Xte.shape[0])},
                       model_size_bytes=model.model_size_bytes_)
    st.session_state["xmlc_result"] = dict(key=run_key, model=model, S=S, table=table,
                                           train_s=train_s, pred_s=pred_s, is_tree=is_tree)

res = st.session_state.get("xmlc_result")
if res is None or res["key"] != run_key:
    st.info("Set the parameters and press **Train**.")
    st.stop()

# ------------------------------------------------------------------ results
model, S, table = res["model"], res["S"], res["table"]
m1, m2, m3, m4 = st.columns(4)
m1.metric("P@1", f"{table.loc['P@k', 'k=1']:.2f}%", border=True)
m2.metric("Train time", f"{res['train_s']:.2f} s", border=True)
m3.metric("Predict (per point)", f"{1000 * res['pred_s'] / max(1, Xte.shape[0]):.3f} ms",
          border=True)
m4.metric("Model size", f"{model.model_size_bytes_ / 2 ** 20:.2f} MB", border=True)

st.subheader("Metrics on the test split")
st.dataframe(table.style.format("{:.2f}"), width="stretch")
st.plotly_chart(xv.bucket_figure(Ytr, Yte, S), width="stretch")

if res["is_tree"]:
    st.subheader("Label tree")
    t = st.selectbox("Tree", list(range(1, len(model.trees_) + 1)), key="xmlc_tree_pick") - 1
    st.plotly_chart(xv.tree_sunburst(model, t, data.label_names), width="stretch")

st.subheader("A few test points")
n_show = min(6, Xte.shape[0])
rows = np.random.default_rng(0).choice(Xte.shape[0], n_show, replace=False)
st.dataframe(xv.example_predictions(Yte, S, data.label_names, np.sort(rows)),
             width="stretch", hide_index=True)

st.download_button("Download the trained model (.zip artifact)",
                   data=artifact_bytes(model, dataset_fingerprint=fp,
                                       metrics=xv.flat_metrics(table)),
                   file_name=f"{type(model).__name__.lower()}_{data.name or 'model'}.zip",
                   mime="application/zip", key="xmlc_download")
