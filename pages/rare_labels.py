"""Rare labels and imputation: REFRAG re-ranking and FIAT feature imputation of a classifier
run the user picks, each a new run on the session's split (nothing trained unasked)."""
import functools

import streamlit as st

from featagg_app.views import rare_labels as rv
from featagg_app.views import display
from featagg_app import runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_core.artifacts.store import artifact_bytes
from featagg_core.experiment import (
    DEFAULT_ALPHAS,
    DEFAULT_FRACTIONS,
    bucket_metrics,
    canonical_spec,
    erasure_curve,
    predictions,
    refrag_alpha_curve,
    run_name,
    split_rows,
)
from featagg_core.agglomeration.fiat import erase_features

PAGE = "Rare labels"
DEFAULT_CLASSIFIER = {"classifier": {"kind": "ktxmlc", "n_clusters": 2, "n_trees": 1}}
N_EVAL = 1000                      # test rows of the erasure experiment

st.title("Rare labels and imputation")

with st.expander("How it works", expanded=False):
    st.markdown(
        "Both methods reuse **DEFRAG**'s feature clusters (Jalan & Kar, IJCAI 2019). Inside "
        "each cluster they count how often two features occur together in the training "
        "rows: the *pseudo co-occurrence* C^F. It is block-diagonal — only pairs of "
        "features in the same cluster — so it stays small (at most d × d0 numbers) even "
        "with millions of features.\n\n"
        "**Which classifier.** Both work on top of a classifier **run** of this session "
        "(pick it below; the latest one is used to begin with). If that run has a DEFRAG "
        "step, its clusters are used; if not, REFRAG / FIAT fit their own DEFRAG-XY d0 = 8 "
        "on the training rows. Every REFRAG / FIAT fit is a new run on the session's split "
        "(sidebar): the classifier is reused as it is, only the new step is fitted, and "
        "nothing is ever trained without you pressing a button.\n\n"
        "**REFRAG (re-ranking).** A classifier trained on few examples of a label rarely "
        "ranks it high. REFRAG gives every label a *prototype*: the sum of its training "
        "points, smoothed with C^F so that a rare label's few examples also cover the "
        "words that go with theirs. For a test point it re-scores the classifier's best "
        "100 labels, plus the labels whose prototypes are nearest, as\n\n"
        "  score = α · classifier score + (1 − α) · w^β · exp(−γ/2 · ‖x − prototype‖²)\n\n"
        "- **α** — trust in the classifier (1 = unchanged ranking, 0 = prototypes only).\n"
        "- **γ** — how sharply the affinity falls with distance (large γ: only very close "
        "prototypes count).\n"
        "- **β** — extra weight for rare labels through their inverse propensity w "
        "(0 = the paper's plain affinity).\n"
        "- **Tune on validation rows** (on to begin with) — instead of setting α, γ, β by "
        "hand, try a small grid of them on validation rows (never the test rows) and keep "
        "the one with the highest coverage@5 whose P@5 stays within half a point of the "
        "classifier's; α = 1 (REFRAG off) when none does. The page says what it chose.\n\n"
        "Watch **coverage@5** (how many different labels are ever predicted correctly) and "
        "**PSP@5** (precision that rewards rare labels more) rise while **P@5** falls a little.\n\n"
        "**FIAT (imputation).** When a point has lost features (a short query, a truncated "
        "document), FIAT fills them in from C^F: a missing feature gets the average value of "
        "the observed features of its cluster, weighted by how similar their columns are "
        "(cosine), and scaled by the **mix** weight (0.25 to begin with: an imputed value "
        "is a guess; data with few features per point may want more). Observed features "
        "are never changed. On a point that lost nothing FIAT only guesses features it never "
        "had, which usually costs a little precision: use it where features are missing. "
        "The erasure experiment removes a fraction of every test point's features at random "
        "and compares the classifier's precision with and without FIAT.")

data = state.require_dataset("multilabel")
split = state.current_split(data)
page_ns = state.page_state(PAGE, data)
st.caption(f"**{md_escape(state.dataset_label(data))}**")
st.caption(state.split_caption(split))


def _plain_classifier(run):
    return "rerank" not in run.spec and "impute" not in run.spec


# ---------------------------------------------------------------------------
# the classifier both methods work on
# ---------------------------------------------------------------------------
default = canonical_spec(DEFAULT_CLASSIFIER)
base = runs_ui.run_section(
    PAGE, data, split, default, slot="base", key="rl_train_default", layout="fallback",
    button=f"Train {run_name(default)} on raw features (estimated time: {{estimate}})",
    picker=runs_ui.Picker("Classifier run", "classifier", "rl_base", where=_plain_classifier,
                          help="the classifier runs of this session on this dataset "
                               "(Extreme classification page)"),
    empty="No classifier run on this split yet: REFRAG and FIAT work on top of one. "
          "Train one on the **Extreme classification** page (your own settings, raw "
          "or DEFRAG features), or train a small default here.").run

has_defrag = "defrag" in base.spec
clusters_note = (f"{int(base.pipeline.defrag.n_clusters_):,} feature clusters of its DEFRAG "
                 "step" if has_defrag else
                 "no DEFRAG step: REFRAG / FIAT fit their own DEFRAG-XY d0 = 8 on the "
                 "training rows")
st.caption(f"Re-ranking and imputing for **{md_escape(state.run_title(base))}** "
           f"(P@5 {100 * base.metrics['test']['P@5']:.2f} %; {clusters_note}).")


def _on_base(run):
    """Runs made from ``base`` (same classifier sub-spec and split)."""
    return (run.spec.get("classifier") == base.spec["classifier"]
            and run.spec.get("defrag") == base.spec.get("defrag"))


test_rows = split_rows(data, split, "test")
tab_r, tab_f = st.tabs(["REFRAG: rare labels", "FIAT: missing features"])

# ---------------------------------------------------------------------------
# REFRAG
# ---------------------------------------------------------------------------
with tab_r:
    # on by default: the paper's fixed alpha = 0.4 can cost several points of P@5 (Enron
    # 7.7); tuned, P@5 stays within half a point of the classifier's
    tune = st.toggle("Tune α, γ and β on validation rows (REFRAG that never hurts)",
                     value=True, key=data_key("rl_tune", data),
                     help="a small grid is scored on the split's validation rows (or on 20 % "
                          "carved from the training rows when the split has none); the "
                          "setting with the largest coverage@5 whose P@5 stays within half a "
                          "point of the classifier's (95 % confidence) is kept. Switch it off "
                          "to set α, γ and β yourself.")
    c1, c2, c3 = st.columns(3)
    alpha = c1.slider("α — weight of the classifier", 0.0, 1.0, 0.4, 0.05, key=data_key("rl_alpha", data),
                      disabled=tune,
                      help="1 keeps the classifier's ranking; lower values listen more to the "
                           "label prototypes")
    gamma = c2.select_slider("γ — sharpness of the affinity",
                             options=[0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0], value=1.0,
                             key=data_key("rl_gamma", data), disabled=tune)
    beta = c3.select_slider("β — rare-label weight", options=[0.0, 0.25, 0.5, 1.0, 2.0],
                            value=0.5, key=data_key("rl_beta", data), disabled=tune,
                            help="affinity multiplied by (inverse propensity)^β; 0 = paper")
    with st.expander("More settings"):
        a1, a2, a3 = st.columns(3)
        shortlist = a1.number_input("classifier shortlist per point", 5, 500, 100, 5,
                                    key=data_key("rl_short", data))
        n_proto = a2.number_input("extra candidates: nearest prototypes", 0, 100, 10, 1,
                                  key=data_key("rl_nproto", data))
        norm = a3.selectbox("C^F normalisation", ["cosine", "conditional", "row", "none"],
                            key=data_key("rl_norm", data),
                            help="'none' is the literal C^F Xᵀ Y of the paper")
    rerank = {"kind": "refrag", "alpha": float(alpha), "gamma": float(gamma),
              "propensity_exponent": float(beta), "shortlist": int(shortlist),
              "n_prototype_candidates": int(n_proto), "normalization": norm, "tune": bool(tune)}
    try:
        r_spec = canonical_spec({**base.spec, "rerank": rerank})
    except ValueError as exc:
        show_error(exc)
        st.stop()
    ref = runs_ui.run_section(
        PAGE, data, split, r_spec, slot="refrag", key="rl_refrag_run", base=base,
        button="Re-rank with REFRAG", columns=(1, 3),
        caption="(the classifier is reused; REFRAG's prototypes are built from the training "
                "rows).",
        picker=runs_ui.Picker("REFRAG run", "classifier", "rl_refrag_show", refit=False,
                              where=lambda r: "rerank" in r.spec and _on_base(r)),
        empty="Press **Re-rank with REFRAG**: α, γ and β are tuned on validation rows, "
              "or switch tuning off and set them yourself.", stop=False).run
    if ref is not None:
        if ref.spec != r_spec:
            st.caption(f"Shown: **{md_escape(state.run_title(ref))}**; press "
                       "**Re-rank with REFRAG** to apply the new settings.")
        tuning = getattr(ref.pipeline.reranker, "tuning_", None)
        if tuning is not None:
            st.success(md_escape(ref.message), icon="🎯")
        flat = ref.metrics["test"]
        table = rv.metrics_table(flat)
        b, r = table.loc["classifier"], table.loc["REFRAG"]
        cols = st.columns(4)
        for col, m in zip(cols, ["P@1", "P@5", "PSP@5", "coverage@5"]):
            col.metric(f"{m} with REFRAG", f"{r[m]:.2f} %", f"{r[m] - b[m]:+.2f} vs classifier",
                       border=True)
        st.dataframe(table.style.format("{:.2f}"), width="stretch")
        st.caption(f"{int(flat['n_rows']):,} test rows; re-ranking took "
                   f"{ref.timings.get('predict_ms_per_point', 0.0):.3f} ms per point "
                   f"(classifier included), building the prototypes "
                   f"{ref.timings.get('rerank_s', 0.0):.2f} s.")

        views = page_ns.setdefault("refrag_views", {})
        if views.get("run_id") != ref.run_id:
            views.clear()
            views["run_id"] = ref.run_id
            views["pred"] = predictions(ref, data, split, "test", k=5)

        st.subheader("Head and tail")
        kb = st.radio("top k", [1, 3, 5], index=2, horizontal=True, key="rl_bucket_k",
                      help="coverage@1 separates the methods better when nearly every label "
                           "is found somewhere in the top 5")
        if int(kb) not in views:
            views[int(kb)] = rv.bucket_table(bucket_metrics(ref, data, split, "test",
                                                            k=int(kb)), k=int(kb))
        bt = views[int(kb)]
        display.plotly_chart(rv.bucket_figure(bt, ["classifier", "REFRAG"], k=int(kb)))
        st.dataframe(bt.style.format({c: "{:.2f}" for c in bt.columns if "@" in c
                                      or c.startswith("coverage")}), width="stretch",
                     hide_index=True)
        st.caption(f"Labels are split into five equal groups by training frequency. "
                   f"'P@{kb} …' is the group's share of P@{kb} (the groups add up to P@{kb}).")

        st.subheader("Rare labels REFRAG found")
        pred = views["pred"]
        ex = rv.rare_examples(pred.Y_train, pred.Y_true, pred.base, pred.scores,
                              data.label_names, k=5, max_rows=12)
        if len(ex):
            ex.insert(0, "row", pred.rows[ex["test point"].to_numpy()])
            st.dataframe(ex.drop(columns=["test point"]), width="stretch", hide_index=True,
                         column_config={"train examples": display.COUNT})
            st.caption("Correct labels in REFRAG's top 5 that the classifier's top 5 missed, "
                       "rarest first.")
        else:
            st.write("With these settings REFRAG found no correct label the classifier missed.")

        st.subheader("The α trade-off")
        a_cur = float(ref.pipeline.reranker.alpha)     # a tuned run's chosen α, not the spec's
        alphas = tuple(sorted(set(DEFAULT_ALPHAS) | {a_cur}, reverse=True))
        sweep = runs_ui.page_result(
            PAGE, "alpha", (ref.run_id, alphas), f"α curve of {ref.name}",
            lambda progress, cancel: refrag_alpha_curve(ref, data, split, alphas, ks=(5,)))
        if sweep is not None:
            display.plotly_chart(rv.sweep_figure(sweep, a_cur))
            at1 = sweep[sweep["alpha"] == 1.0].iloc[0]
            base_cov, base_p5 = 100 * at1["coverage@5"], 100 * at1["P@5"]
            dbl = sweep[100 * sweep["coverage@5"] >= 2 * base_cov]
            if len(dbl):
                a0 = dbl.iloc[0]
                st.write(f"Coverage@5 doubles at α = {a0['alpha']:g} ({base_cov:.1f} → "
                         f"{100 * a0['coverage@5']:.1f} %), at a P@5 cost of "
                         f"{base_p5 - 100 * a0['P@5']:.2f} points.")
            else:
                st.write(f"Coverage@5 does not double anywhere on this curve (classifier: "
                         f"{base_cov:.1f} %, best {100 * sweep['coverage@5'].max():.1f} %).")

        st.download_button("Download the REFRAG pipeline (artifact)",
                           data=functools.partial(artifact_bytes, ref.pipeline,
                                                  dataset_fingerprint=data.fingerprint,
                                                  metrics=flat),
                           file_name="refrag_pipeline.fgz", mime="application/zip",
                           key="rl_dl_refrag", on_click="ignore")

# ---------------------------------------------------------------------------
# FIAT
# ---------------------------------------------------------------------------
with tab_f:
    f1, f2, f3 = st.columns(3)
    p = f1.select_slider("fraction of features erased", options=list(DEFAULT_FRACTIONS),
                         value=0.5, key=data_key("rl_p", data))
    mix = f2.slider("mix — weight of imputed values", 0.0, 1.0, 0.25, 0.05, key=data_key("rl_mix", data))
    fnorm = f3.selectbox("C^F normalisation", ["cosine", "conditional", "row", "none"],
                         key=data_key("rl_fnorm", data))
    try:
        f_spec = canonical_spec({**base.spec, "impute": {"kind": "fiat", "mix": float(mix),
                                                         "normalization": fnorm}})
    except ValueError as exc:
        show_error(exc)
        st.stop()
    fr = runs_ui.run_section(
        PAGE, data, split, f_spec, slot="fiat", key="rl_fiat_run", base=base,
        button="Impute with FIAT", columns=(1, 3),
        caption="(FIAT's operator from the training rows; the classifier is reused).",
        picker=runs_ui.Picker("FIAT run", "classifier", "rl_fiat_show", refit=False,
                              where=lambda r: "impute" in r.spec and _on_base(r)),
        empty="Choose the mix and press **Impute with FIAT**.", stop=False).run
    if fr is not None:
        if fr.spec != f_spec:
            st.caption(f"Shown: **{md_escape(state.run_title(fr))}**; press "
                       "**Impute with FIAT** to apply the new settings.")
        n_eval = min(test_rows.X.shape[0], N_EVAL)
        curve = runs_ui.page_result(
            PAGE, "erasure", (fr.run_id, n_eval), f"Erasure curve of {fr.name}",
            lambda progress, cancel: erasure_curve(fr, data, split, DEFAULT_FRACTIONS,
                                                   ks=rv.KS, random_state=0, max_rows=n_eval))
        if curve is not None:
            row0 = curve[curve["fraction"] == 0.0].iloc[0]
            rowp = curve[curve["fraction"] == float(p)].iloc[0]
            clean, erased, fiat = 100 * row0["P@1"], 100 * rowp["P@1"], 100 * rowp["P@1 FIAT"]
            cols = st.columns(3)
            cols[0].metric("P@1 on complete points", f"{clean:.2f} %", border=True)
            cols[1].metric(f"P@1 with {p:.0%} erased", f"{erased:.2f} %",
                           f"{erased - clean:+.2f}", border=True)
            cols[2].metric("P@1 erased + FIAT", f"{fiat:.2f} %", f"{fiat - erased:+.2f} vs erased",
                           border=True)
            lost = clean - erased
            if lost > 0:
                st.write(f"FIAT recovers {100 * (fiat - erased) / lost:.0f} % of the P@1 lost "
                         f"to erasure (on the first {n_eval:,} test rows).")
            st.subheader("Precision as features are erased")
            display.plotly_chart(rv.erasure_figure(curve))
            st.caption(f"On the first {n_eval:,} test rows; the same random erasure (seed 0) "
                       "for every method, nested across fractions.")

        st.subheader("One point, before and after")
        i = st.number_input("test point", 0, max(n_eval - 1, 0), 0, 1, key=data_key("rl_point", data))
        Xs = test_rows.X[int(i):int(i) + 1]
        imputer = fr.pipeline.imputer
        Xe = erase_features(test_rows.X[:n_eval], float(p), random_state=0)[int(i):int(i) + 1]
        Xi = imputer.transform(Xe)
        ex = rv.imputation_example(Xs, Xe, Xi, imputer.labels_, data.feature_names)
        counts = rv.status_counts(ex)
        st.write(f"Kept {counts['kept']}, erased and restored {counts['erased, restored']}, "
                 f"erased and lost {counts['erased, lost']}, newly imputed "
                 f"{counts['imputed (new)']} (first 30 rows shown). The cluster column says "
                 "which DEFRAG cluster each imputed value came from.")
        st.dataframe(ex.head(30).style.format({"original": "{:.3g}", "after erasure": "{:.3g}",
                                               "after FIAT": "{:.3g}"}),
                     width="stretch", hide_index=True)
        st.download_button("Download the FIAT pipeline (artifact)",
                           data=functools.partial(artifact_bytes, fr.pipeline,
                                                  dataset_fingerprint=data.fingerprint,
                                                  metrics=fr.metrics.get("test", {})),
                           file_name="fiat_pipeline.fgz", mime="application/zip",
                           key="rl_dl_fiat", on_click="ignore")
