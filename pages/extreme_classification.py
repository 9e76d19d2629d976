"""Extreme classification page: train KTXMLC (or one-vs-all) on raw or DEFRAG features of
the session's split, with the elbow plot for K, progress and Cancel, metrics, the label
tree — every training a run through the job runner."""
import functools

import numpy as np
import streamlit as st

from featagg_app.views import display
from featagg_app import experiment_sections, runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_app.views import xmlc as xv
from featagg_core.artifacts.store import artifact_bytes
from featagg_core.experiment import bucket_metrics, canonical_spec, elbow, predictions

PAGE = "Extreme classification"
FEATURES = ["raw", "agglomerated (DEFRAG)"]
#: the presets' KTXMLC settings (widget name -> value; the widgets are keyed by the dataset,
#: featagg_app.keys.data_key); "custom" leaves them as they are
PRESETS = {
    "paper": {"xmlc_K": 16, "xmlc_trees": 3, "xmlc_depth": 20, "xmlc_leaf": 100,
              "xmlc_beam": 10},
    "fast": {"xmlc_K": 16, "xmlc_trees": 1, "xmlc_depth": 4, "xmlc_leaf": 10,
             "xmlc_beam": 5},
    "custom": {},
}
#: settings of a preset that have no widget (KTXMLC parameters): the fast preset balances
#: its 16-way clusters (a shallow tree), and runs 5 spherical k-means passes and 5 dual
#: coordinate descent epochs instead of 20 (measured: benchmarks/results/dashboard_notes.md)
PRESET_EXTRAS = {"fast": {"balanced": True, "kmeans_max_iter": 5, "max_iter": 5}}
#: the same in words, for the page
PRESET_EXTRAS_TEXT = {"fast": "balanced clusters and 5 instead of 20 passes of k-means and of "
                              "the solver"}
PRESET_TITLES = {"paper": "Default (K=16, 3 trees)", "fast": "Fast (1 tree, K=16)",
                 "custom": "Custom"}
#: estimated seconds of the paper settings from which the page starts on the fast preset
FAST_FROM_S = 120.0


def _fit_to_labels(key, value, L_now):
    """A preset value within its widget's range on ``L_now`` labels (K ≤ L, leaf ≤ L)."""
    if key == "xmlc_leaf":
        return min(value, L_now)
    if key == "xmlc_K":
        return min(value, max(2, min(L_now, 1000)))
    return value


def _apply_preset(data):
    """The chosen preset's numbers in the widgets of ``data`` (fitted to its label count).
    The widgets are keyed by the dataset: another dataset starts from its own preset, so a
    number never carries over (Streamlit would reset one outside its new range to the
    minimum: a leaf size of 1 and K = 2 after Bibtex → Yeast)."""
    L_now = int(data.Y.shape[1])
    preset = st.session_state.get(data_key("xmlc_preset", data), "paper")
    for key, value in PRESETS[preset].items():
        st.session_state[data_key(key, data)] = _fit_to_labels(key, value, L_now)


def _preset_matches(data) -> bool:
    """Whether the numbers on the page are still the chosen preset's."""
    L_now = int(data.Y.shape[1])
    preset = PRESETS[st.session_state[data_key("xmlc_preset", data)]]
    return all(st.session_state.get(data_key(k, data)) == _fit_to_labels(k, v, L_now)
               for k, v in preset.items())

st.title(PAGE)

with st.expander("How it works", expanded=False):
    st.markdown(
        "**KTXMLC** (Prajapati & Thakkar 2021) learns to tag a point with a few of "
        "thousands of labels without scoring every label. It builds **label trees**: every "
        "label is described by the (normalised) average of the feature vectors of its "
        "training points; a node's labels are split into at most **K** balanced groups (by "
        "default as PECOS does: repeated balanced 2-means, about 100 labels per group at "
        "most; the paper's k-means‖ is the `partition=\"kmeans\"` option), each group "
        "again, until a group has at most the **leaf size** labels or the tree reaches its "
        "**depth**. Every node holds one linear classifier per child (squared-hinge SVM, "
        "cost **C**, solved by dual coordinate descent as liblinear does), trained only on "
        "the points that reach that node; its decision value is turned into a probability "
        "by a sigmoid fitted on the training rows (Platt scaling).\n\n"
        "To predict, a point walks down each tree keeping the **beam width** most promising "
        "nodes per level; a label's score multiplies the probabilities along its path, and "
        "the **trees** (different random seeds) are averaged.\n\n"
        "- **K = 2** gives Parabel-like balanced binary trees; a larger K (Bonsai-like) gives "
        "shallower trees — the **elbow** plot (on the training rows) shows where adding "
        "clusters stops paying off. The defaults (K = 16, 3 trees, leaf size 100, C = 0.5, "
        "beam 10, raw features) are the settings measured against omikuji, napkinXC and "
        "PECOS in `benchmarks/results/xmlc.md`.\n"
        "- **C** weighs training errors against small weights: a smaller C regularises "
        "more, which helps labels with few positives.\n"
        "- **One-vs-all** trains every label against all points: exact but slower for many "
        "labels — what the tree trades away.\n"
        "- **The data chooses** (KTXMLC's default): 20 % of the training rows are held out, "
        "and one flat one-vs-all model (when there are few enough labels for it) and the "
        "label trees are fitted on the rest at C; the better one is tried at C/2 and 2C "
        "too. The held-out rows pick the winner by P@1 (P@5 when P@1 ties), which is then "
        "refitted on all training rows; **What KTXMLC chose** shows the candidates. "
        "**Always grow the trees** turns this off: the label trees at this C.\n"
        "- **Agglomerated features** put a DEFRAG step before the classifier: a DEFRAG run "
        "from the Feature agglomeration page **on the same split** is reused as it is (it "
        "saw the same training rows); without one, the pipeline fits DEFRAG-XY on the "
        "training rows itself. Either way the test rows' labels never shape the features.\n"
        "- **Split and runs.** Training uses the training rows of the session's split (set "
        "in the sidebar); the metrics come from the test rows. Every press of **Train** is a "
        "new run, kept for Compare, Rare labels and Export.\n"
        "- Metrics: P@k (precision of the top k), nDCG@k, their propensity-scored versions "
        "PSP@k / PSnDCG@k (rare labels count more; propensities from the training rows), "
        "and coverage@k (share of the test set's labels predicted correctly at least once).")

data = state.require_dataset("multilabel")
split = state.current_split(data)
page_ns = state.page_state(PAGE, data)


@st.cache_data(max_entries=8, show_spinner=False)
def _train_label_counts(fingerprint, split_id, _Y, _rows):
    """Training points per label (names the label tree's inner nodes), once per split."""
    from featagg_app.views.data import column_counts_of_rows
    return column_counts_of_rows(_Y, _rows)

st.caption(f"**{md_escape(state.dataset_label(data))}**")
st.caption(state.split_caption(split))

# ------------------------------------------------------------------ features and model
c1, c2 = st.columns(2)
features = c1.radio("Features", FEATURES, key="xmlc_features")
model_kind = c2.radio("Model", ["KTXMLC (label trees)", "One-vs-all"], key="xmlc_model")
is_tree = model_kind.startswith("KTXMLC")

defrag_run, defrag_spec = None, None
if features == FEATURES[1]:
    # no Run of its own: the picker's refit of a run of another split is its slot's job
    defrag_run = runs_ui.run_section(
        PAGE, data, split, None, slot="defrag_refit", layout="button",
        error="DEFRAG cannot run", stop=False,
        picker=runs_ui.Picker("DEFRAG run to agglomerate with", "agglomeration",
                              "xmlc_defrag_run",
                              help="the DEFRAG runs of this session on this dataset, latest "
                                   "first")).run
    if defrag_run is not None:
        defrag_spec = defrag_run.spec["defrag"]
        st.info(f"Using the DEFRAG clustering of **{md_escape(state.run_title(defrag_run))}**"
                f": {data.X.shape[1]:,} features → "
                f"{int(defrag_run.pipeline.defrag.n_clusters_):,} clusters, fitted on this "
                "split's training rows.")
    else:
        d0 = st.number_input("DEFRAG leaf size d0 (features per cluster)", 2, 64, 8,
                             key=data_key("xmlc_d0", data))
        defrag_spec = {"d0": int(d0), "representation": "XY"}
        st.info(f"No DEFRAG run on this split in this session (Feature agglomeration page): "
                f"the pipeline fits DEFRAG-XY d0 = {int(d0)} on the training rows as its "
                "first step.")

# ------------------------------------------------------------------ parameters
L = data.Y.shape[1]
K_PRESET = data_key("xmlc_preset", data)
if is_tree:
    if K_PRESET not in st.session_state:
        # a training set on which the paper's settings would take minutes starts on the
        # fast preset; either way the person can switch
        paper = canonical_spec({"classifier": dict(
            kind="ktxmlc", n_clusters=16, n_trees=3, max_depth=20,
            max_leaf_labels=min(100, L), beam_width=10, random_state=0)})
        est = runs_ui.estimate(data, split, paper)
        st.session_state[K_PRESET] = ("fast" if est is not None and est > FAST_FROM_S
                                      else "paper")
        _apply_preset(data)
    if page_ns.get("elbow_K_pending") is not None:    # the elbow's K, once computed
        st.session_state[data_key("xmlc_K", data)] = int(page_ns.pop("elbow_K_pending"))
    # widgets not drawn on a run (One-vs-all picked) lose their state: refill from the
    # preset (the paper's values for "custom")
    for _k, _v in (PRESETS[st.session_state[K_PRESET]] or PRESETS["paper"]).items():
        if data_key(_k, data) not in st.session_state:
            st.session_state[data_key(_k, data)] = _fit_to_labels(_k, _v, L)
    # the preset Custom started from: it keeps that preset's settings without a widget
    # (Fast's 5 passes), so changing the beam does not also make the solver 4x slower
    if st.session_state[K_PRESET] != "custom":
        st.session_state[data_key("_xmlc_preset_base", data)] = st.session_state[K_PRESET]
    # a number changed by hand (or by the elbow) is no longer the preset: say so, rather
    # than keep "Default (K=16, 3 trees)" above a page that trains one tree
    if st.session_state[K_PRESET] != "custom" and not _preset_matches(data):
        st.session_state[K_PRESET] = "custom"
    st.radio("Preset", list(PRESETS), key=K_PRESET, horizontal=True,
             format_func=PRESET_TITLES.__getitem__, on_change=_apply_preset, args=(data,),
             help="**Default**: KTXMLC's defaults, K = 16, 3 trees, leaves of 100 labels, "
                  "beam 10 (the settings measured against omikuji, napkinXC and PECOS in "
                  "benchmarks/results/xmlc.md). **Fast**: one balanced 16-way tree, leaves of "
                  "10 labels, a beam of 5, and 5 instead of 20 passes of k-means and of "
                  "the SVM solver: about a sixth of the default settings' work, a point or "
                  "two of precision lower — a first look at a million points. The "
                  "numbers below stay editable: changing one switches to **Custom**, "
                  "which keeps the settings the page does not show of the preset it "
                  "started from.")
    # the preset itself, or the one Custom started from (set above on every preset run)
    preset_base = st.session_state.get(data_key("_xmlc_preset_base", data), "paper")
    hidden = PRESET_EXTRAS.get(preset_base, {})
    if st.session_state[K_PRESET] == "custom" and hidden:
        st.caption(f"Custom, started from **{PRESET_TITLES[preset_base]}**: it keeps that "
                   f"preset's {PRESET_EXTRAS_TEXT[preset_base]}. Pick *Default* for KTXMLC's "
                   "own values.")
    p1, p2, p3 = st.columns(3)
    K = p1.number_input("K (children per node)", 2, max(2, min(L, 1000)),
                        key=data_key("xmlc_K", data))
    if page_ns.get("elbow_applied") is not None:
        p1.caption(f"K preselected from the elbow (K = {page_ns['elbow_applied'][1]}).")
    n_trees = p1.number_input("Trees", 1, 10, key=data_key("xmlc_trees", data))
    depth = p2.number_input("Max depth", 1, 30, key=data_key("xmlc_depth", data))
    leaf = p2.number_input("Leaf size (max labels per leaf)", 1, max(1, L),
                           key=data_key("xmlc_leaf", data))
    C = p3.number_input("C (SVM cost)", 0.01, 100.0, 0.5, key=data_key("xmlc_C", data),
                        format="%.2f")
    beam = p3.number_input("Beam width", 1, 200, key=data_key("xmlc_beam", data))
    keep_trees = p3.checkbox(
        "Always grow the trees", key=data_key("xmlc_keep_trees", data),
        help="Off (KTXMLC's default, form=\"auto\"): KTXMLC chooses between one flat "
             "model (one-vs-all) and these label trees, and C among C/2, C and 2C, on 20 % "
             "of the training rows held out for validation (best P@1, P@5 when P@1 ties), "
             "then refits the winner on all training rows; the run's name says what it "
             "chose. On: always the label trees at this C.")
    classifier = dict(kind="ktxmlc", n_clusters=int(K), n_trees=int(n_trees),
                      max_depth=int(depth), max_leaf_labels=int(leaf), C=float(C),
                      beam_width=int(beam), one_vs_all="never" if keep_trees else "auto",
                      form="trees" if keep_trees else "auto", random_state=0)
    classifier.update(hidden)

    with st.expander("Elbow plot: which K?", expanded=False):
        st.caption("Within-cluster sum of squares of the label vectors of the training rows "
                   "when the root is split into K clusters; the star marks the elbow "
                   "(largest distance to the chord).")
        ks = tuple(k for k in (2, 4, 8, 16, 32, 64) if k < L) or (2,)
        elbow_key = (split.split_id, None if defrag_run is None else defrag_run.run_id, ks)
        if st.toggle("Compute the elbow curve", key=data_key("xmlc_elbow_on", data)):
            base_pipe = None if defrag_run is None else defrag_run.pipeline
            el = runs_ui.page_result(
                PAGE, "elbow", elbow_key, f"Elbow K = {', '.join(map(str, ks))}",
                lambda progress, cancel: elbow(data, split, ks, pipeline=base_pipe))
            if el is not None:
                if (page_ns.get("elbow_applied") or (None,))[0] != elbow_key:
                    # preselect the elbow's K in the K widget (drawn above: next run)
                    page_ns["elbow_applied"] = (elbow_key, int(el.elbow))
                    page_ns["elbow_K_pending"] = int(el.elbow)
                    st.rerun()
                display.plotly_chart(xv.elbow_figure(el))
                st.write(f"Elbow at **K = {el.elbow}**"
                         + (" (on the DEFRAG features of that run)." if defrag_run else "."))
else:
    p1, _ = st.columns([1, 2])
    C = p1.number_input("C (SVM cost)", 0.01, 100.0, 0.5, key=data_key("xmlc_C_ova", data),
                        format="%.2f")
    classifier = dict(kind="ova", C=float(C), random_state=0)
    if L > 5000:
        st.warning(f"One-vs-all trains {L:,} classifiers on all training points: this will "
                   "be slow.")

spec = {"classifier": classifier}
if defrag_spec is not None:
    spec = {"defrag": defrag_spec, **spec}
try:
    spec = canonical_spec(spec)
except ValueError as exc:
    show_error(exc)
    st.stop()

if is_tree:
    experiment_sections.ktxmlc_sweep(PAGE, data, split, classifier)

# ------------------------------------------------------------------ train


def _plain_classifier(run):
    return "rerank" not in run.spec and "impute" not in run.spec


run = runs_ui.run_section(
    PAGE, data, split, spec, slot="train", key="xmlc_train", button="Train", base=defrag_run,
    caption=f"on this server ({split.train.size:,} training rows"
            + (", reusing the picked DEFRAG run" if defrag_run is not None else "") + ").",
    error="Training cannot start",
    picker=runs_ui.Picker("Show run", "classifier", "xmlc_show_run", where=_plain_classifier,
                          help="the classifier runs of this session on this dataset"),
    empty="Set the parameters and press **Train**.").run
if run.spec != spec:
    st.info(f"The results below are for **{md_escape(state.run_title(run))}**; "
            "press **Train** to apply the new settings.")

# ------------------------------------------------------------------ results
test = run.metrics["test"]
table = xv.metrics_table(test)
m1, m2, m3, m4 = st.columns(4)
train_s = run.timings.get("classifier_s", 0.0) + run.timings.get("defrag_s", 0.0)
m1.metric("P@1", f"{100 * test['P@1']:.2f}%", border=True)
m2.metric("Train time", f"{train_s:.2f} s", border=True,
          help="fitting the run's steps on the training rows (a reused DEFRAG step counts 0)")
m3.metric("Predict (per point)", f"{run.timings.get('predict_ms_per_point', 0.0):.3f} ms",
          border=True)
m4.metric("Model size", f"{run.model_sizes.get('total', 0) / 2 ** 20:.2f} MB", border=True)

st.subheader("Metrics on the test split")
st.caption(f"{md_escape(state.run_title(run))} · {int(test['n_rows']):,} test rows "
           f"of {md_escape(split.describe())}")
st.dataframe(table.style.format("{:.2f}"), width="stretch")

views = page_ns.setdefault("views", {})
if views.get("run_id") != run.run_id:
    views.clear()
    views["run_id"] = run.run_id
    views["buckets"] = bucket_metrics(run, data, split, "test", k=5)
    views["pred"] = predictions(run, data, split, "test", k=5)
display.plotly_chart(xv.bucket_figure(views["buckets"], k=5))

clf = run.pipeline.classifier
choice = xv.form_choice(clf)
if choice is not None:
    reason, candidates = choice
    st.subheader("What KTXMLC chose")
    if candidates is None:
        st.caption("As the saved model records it (its candidates are not saved): "
                   + md_escape(reason) + ".")
    else:
        st.caption("Before its final fit KTXMLC held out 20 % of the training rows, fitted "
                   "each candidate on the rest and scored it on the held-out rows (never "
                   "on the test rows). The best P@1 wins; candidates within one standard "
                   "error of it count as tied, and P@5 decides among those (then the "
                   "least training work). It chose " + md_escape(reason) + "; that form "
                   "and C were then refitted on all the training rows.")
        st.dataframe(candidates.style.format({"C": "{:g}", "validation P@1 (%)": "{:.1f}",
                                              "validation P@5 (%)": "{:.1f}"}),
                     width="stretch", hide_index=True)
if hasattr(clf, "tree_nodes"):
    st.subheader("Label tree")
    lc = _train_label_counts(data.fingerprint, split.split_id, data.Y, split.train)
    l1, l2 = st.columns([1, 3])
    t = l1.selectbox("Tree", list(range(1, len(clf.trees_) + 1)),
                     key=data_key("xmlc_tree_pick", data)) - 1
    if views.get("tree") != t:
        views["tree"], views["tree_nodes"], views["tree_root"] = t, clf.tree_nodes(t), 0
    nodes, tree_root = views["tree_nodes"], int(views.get("tree_root", 0))
    shown, complete = xv.shown_nodes(nodes, tree_root)
    if not complete or tree_root:
        opts = xv.tree_drill_options(nodes, tree_root, shown)
        opt_labels = {v: xv.tree_node_label(nodes, v, data.label_names, lc) for v in opts}
        pick = l2.selectbox("Drill down to", opts, index=opts.index(tree_root),
                            format_func=opt_labels.__getitem__,
                            key=f"xmlc_tree_drill_{t}_{tree_root}",
                            help="the tree has too many nodes to draw at once: re-draw it "
                                 "from this node (pick an ancestor to go back up)")
        if pick != tree_root:
            views["tree_root"] = int(pick)
            st.rerun()
    display.plotly_chart(xv.tree_sunburst(clf, t, data.label_names, root=tree_root,
                                          label_counts=lc, nodes=nodes))
    if not xv.is_flat(nodes):
        st.caption("Inner sectors are named by their most frequent labels (training "
                   "rows); the outer ring holds the labels themselves. Click a sector to "
                   "zoom in.")
    if xv.kept_flat_tree(clf):
        why = ("; **What KTXMLC chose** above says why." if choice is not None else
               ": with these settings the beam reaches every leaf cluster, so the trees "
               "would skip no label at prediction, and one-vs-all costs no more to train.")
        st.caption("KTXMLC kept **one flat tree** (one-vs-all)" + why
                   + " Tick **Always grow the trees** to train the label trees.")

st.subheader("A few test points")
pred = views["pred"]
n_show = min(6, pred.Y_true.shape[0])
rows = np.sort(np.random.default_rng(0).choice(pred.Y_true.shape[0], n_show, replace=False))
ex = xv.example_predictions(pred.Y_true, pred.scores, data.label_names, rows)
ex.insert(0, "row", pred.rows[rows])
st.dataframe(ex.drop(columns=["test point"]), width="stretch", hide_index=True)

st.download_button("Download the trained pipeline (.fgz artifact)",
                   data=functools.partial(artifact_bytes, run.pipeline,
                                          dataset_fingerprint=data.fingerprint, metrics=test),
                   file_name=f"pipeline_{data.name or 'model'}.fgz", mime="application/zip",
                   key="xmlc_download", on_click="ignore",
                   help="raw features in, labels out: load with featagg_core.load_artifact")
