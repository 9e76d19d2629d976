"""Rare labels and imputation: REFRAG re-ranking and FIAT feature imputation."""
import time

import numpy as np
import streamlit as st

from featagg_app import rare_labels_view as rv
from featagg_app import session
from featagg_core import metrics as M

PAGE = "Rare labels"
_MEMO = "featagg.rare_labels.memo"
_RECORDED = "featagg.rare_labels.recorded"

st.title("Rare labels and imputation")

with st.expander("How it works", expanded=False):
    st.markdown(
        "Both methods reuse **DEFRAG**'s feature clusters (Jalan & Kar, IJCAI 2019). Inside "
        "each cluster they count how often two features occur together in the training "
        "data: the *pseudo co-occurrence* C^F. It is block-diagonal — only pairs of "
        "features in the same cluster — so it stays small (at most d × d0 numbers) even "
        "with millions of features.\n\n"
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
        "(0 = the paper's plain affinity).\n\n"
        "Watch **coverage@5** (how many different labels are ever predicted correctly) and "
        "**PSP@5** (precision that rewards rare labels more) rise while **P@5** falls a little.\n\n"
        "**FIAT (imputation).** When a point has lost features (a short query, a truncated "
        "document), FIAT fills them in from C^F: a missing feature gets the average value of "
        "the observed features of its cluster, weighted by how similar their columns are "
        "(cosine), and scaled by the **mix** weight. Observed features are never changed. "
        "The erasure experiment removes a fraction of every test point's features at random "
        "and compares the classifier's precision with and without FIAT.")

data = session.require_dataset("multilabel")
fp = data.fingerprint
X, Y, Xt, Yt, split_note = rv.train_test(data)
label_names = data.label_names
feature_names = data.feature_names


def memo(key, fn):
    """Per-session memo of results that depend on this session's fitted objects."""
    store = st.session_state.setdefault(_MEMO, {})
    if key not in store:
        if len(store) > 40:
            store.clear()
        store[key] = fn()
    return store[key]


def usable_defrag(obj):
    return obj is not None and hasattr(obj, "labels_") and \
        np.asarray(obj.labels_).shape[0] == X.shape[1]


def usable_classifier(obj):
    if obj is None or not hasattr(obj, "predict_scores"):
        return False
    try:
        s = obj.predict_scores(Xt[:1], k=1)
    except Exception:  # noqa: BLE001 - trained on other data: not usable here
        return False
    return s.shape == (1, Y.shape[1])


dfg, clf = session.get("defrag"), session.get("ktxmlc")
need_d, need_c = not usable_defrag(dfg), not usable_classifier(clf)
trained_here = []
if need_d or need_c:
    own_d, own_c = session.get("rare_labels.defrag"), session.get("rare_labels.ktxmlc")
    if need_d and usable_defrag(own_d):
        dfg, need_d = own_d, False
        trained_here.append("DEFRAG")
    if need_c and usable_classifier(own_c):
        clf, need_c = own_c, False
        trained_here.append("KTXMLC")
if need_d or need_c:
    from featagg_core.defrag import Defrag
    from featagg_core.ktxmlc import KTXMLC
    with st.status("No fitted DEFRAG / KTXMLC for this dataset yet: training small "
                   "defaults here…", expanded=True) as status:
        bar = st.progress(0.0)
        try:
            if need_d:
                status.write("DEFRAG-XY, d0 = 8 …")
                dfg = Defrag(d0=8, representation="XY", random_state=0).fit(X, Y)
                session.put("rare_labels.defrag", dfg)
                trained_here.append("DEFRAG")
            bar.progress(0.2)
            if need_c:
                status.write("KTXMLC, one tree, K = 2 …")
                clf = KTXMLC(n_trees=1, random_state=0).fit(
                    X, Y, progress=lambda f, msg: bar.progress(0.2 + 0.8 * min(max(f, 0), 1)))
                session.put("rare_labels.ktxmlc", clf)
                trained_here.append("KTXMLC")
            bar.progress(1.0)
            status.update(label="Trained small defaults", state="complete", expanded=False)
        except Exception as exc:  # noqa: BLE001
            status.update(label="Training failed", state="error")
            session.show_error(exc)
            st.stop()
if trained_here:
    st.info(f"Using {' and '.join(trained_here)} trained on this page with small defaults "
            "(DEFRAG-XY d0 = 8; KTXMLC with one tree). Train them on the *Feature "
            "agglomeration* and *Extreme classification* pages to use your own settings here.")
st.caption(f"{session.md_escape(session.dataset_label(data))} · evaluated on {split_note} "
           f"({Xt.shape[0]:,} test points) · {getattr(dfg, 'n_clusters_', '?')} feature "
           f"clusters")

inv_prop = M.inverse_propensity(Y)
tab_r, tab_f = st.tabs(["REFRAG: rare labels", "FIAT: missing features"])

# ---------------------------------------------------------------------------
# REFRAG
# ---------------------------------------------------------------------------
with tab_r:
    from featagg_core.refrag import Refrag
    c1, c2, c3 = st.columns(3)
    alpha = c1.slider("α — weight of the classifier", 0.0, 1.0, 0.4, 0.05, key="rl_alpha",
                      help="1 keeps the classifier's ranking; lower values listen more to the "
                           "label prototypes")
    gamma = c2.select_slider("γ — sharpness of the affinity",
                             options=[0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0], value=1.0,
                             key="rl_gamma")
    beta = c3.select_slider("β — rare-label weight", options=[0.0, 0.25, 0.5, 1.0, 2.0],
                            value=0.5, key="rl_beta",
                            help="affinity multiplied by (inverse propensity)^β; 0 = paper")
    with st.expander("More settings"):
        a1, a2, a3 = st.columns(3)
        shortlist = a1.number_input("classifier shortlist per point", 5, 500, 100, 5,
                                    key="rl_short")
        n_proto = a2.number_input("extra candidates: nearest prototypes", 0, 100, 10, 1,
                                  key="rl_nproto")
        norm = a3.selectbox("C^F normalisation", ["cosine", "conditional", "row", "none"],
                            key="rl_norm",
                            help="'none' is the literal C^F Xᵀ Y of the paper")
    try:
        t0 = time.perf_counter()
        S = memo(("scores", id(clf), fp, int(shortlist)),
                 lambda: clf.predict_scores(Xt, k=int(max(shortlist, 5))))
        t_pred = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = memo(("refrag", id(dfg), fp, norm),
                   lambda: Refrag(normalization=norm).fit(X, Y, dfg))
        t_fit = time.perf_counter() - t0
        ref.set_params(alpha=float(alpha), gamma=float(gamma), propensity_exponent=float(beta),
                       shortlist_size=int(shortlist), n_prototype_candidates=int(n_proto))
        t0 = time.perf_counter()
        R = ref.rerank(Xt, S, k=5)
        t_rr = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001
        session.show_error(exc)
        st.stop()
    table = rv.metrics_table(Yt, {"classifier": S, "REFRAG": R}, inv_prop)
    b, r = table.loc["classifier"], table.loc["REFRAG"]
    cols = st.columns(4)
    for col, m in zip(cols, ["P@1", "P@5", "PSP@5", "coverage@5"]):
        col.metric(f"{m} with REFRAG", f"{r[m]:.2f} %", f"{r[m] - b[m]:+.2f} vs classifier",
                   border=True)
    st.dataframe(table.style.format("{:.2f}"), width="stretch")
    st.caption(f"Re-ranking {Xt.shape[0]:,} points took {t_rr * 1e3:.0f} ms "
               f"({t_rr / max(Xt.shape[0], 1) * 1e3:.3f} ms per point).")

    run_key = ("refrag", fp, id(clf), id(dfg), float(alpha), float(gamma), float(beta),
               int(shortlist), int(n_proto), norm)
    recorded = st.session_state.setdefault(_RECORDED, set())
    if run_key not in recorded:
        recorded.add(run_key)
        session.record_run(PAGE, "REFRAG", data, ref.get_params(),
                           {**{f"{k} base": float(b[k]) for k in ("P@1", "P@5", "PSP@5",
                                                                 "coverage@5")},
                            **{k: float(r[k]) for k in table.columns}},
                           {"fit_s": t_fit, "rerank_s": t_rr, "base_predict_s": t_pred},
                           model_size_bytes=int(ref.prototypes_.data.nbytes
                                                + ref.prototypes_.indices.nbytes))

    st.subheader("Head and tail")
    kb = st.radio("top k", [1, 3, 5], index=2, horizontal=True, key="rl_bucket_k",
                  help="coverage@1 separates the methods better when nearly every label is "
                       "found somewhere in the top 5")
    bt = rv.bucket_table(Y, Yt, {"classifier": S, "REFRAG": R}, k=int(kb))
    st.plotly_chart(rv.bucket_figure(bt, ["classifier", "REFRAG"], k=int(kb)),
                    width="stretch")
    st.dataframe(bt.style.format({c: "{:.2f}" for c in bt.columns if "@" in c
                                  or c.startswith("coverage")}), width="stretch",
                 hide_index=True)
    st.caption(f"Labels are split into five equal groups by training frequency. "
               f"'P@{kb} …' is the group's share of P@{kb} (the groups add up to P@{kb}).")

    st.subheader("Rare labels REFRAG found")
    ex = rv.rare_examples(Y, Yt, S, R, label_names, k=5, max_rows=12)
    if len(ex):
        st.dataframe(ex, width="stretch", hide_index=True)
        st.caption("Correct labels in REFRAG's top 5 that the classifier's top 5 missed, "
                   "rarest first.")
    else:
        st.write("With these settings REFRAG found no correct label the classifier missed.")

    st.subheader("The α trade-off")
    alphas = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    if float(alpha) not in alphas:
        alphas = sorted(set(alphas) | {float(alpha)}, reverse=True)

    def _sweep():
        import pandas as pd
        rows = []
        for a in alphas:
            ref.set_params(alpha=a)
            P = ref.rerank(Xt, S, k=5)
            rows.append({"alpha": a, "P@5": M.precision_at_k(Yt, P, 5) * 100,
                         "coverage@5": M.coverage_at_k(Yt, P, 5) * 100})
        ref.set_params(alpha=float(alpha))
        return pd.DataFrame(rows)
    sweep = memo(("sweep", id(ref), id(S), tuple(alphas), float(gamma), float(beta),
                  int(shortlist), int(n_proto)), _sweep)
    st.plotly_chart(rv.sweep_figure(sweep, float(alpha)), width="stretch")
    base_cov = float(sweep.loc[np.isclose(sweep["alpha"], 1.0), "coverage@5"].iloc[0])
    base_p5 = float(sweep.loc[np.isclose(sweep["alpha"], 1.0), "P@5"].iloc[0])
    dbl = sweep[sweep["coverage@5"] >= 2 * base_cov]
    if len(dbl):
        a0 = dbl.iloc[0]
        st.write(f"Coverage@5 doubles at α = {a0['alpha']:g} ({base_cov:.1f} → "
                 f"{a0['coverage@5']:.1f} %), at a P@5 cost of {base_p5 - a0['P@5']:.2f} points.")
    else:
        st.write(f"Coverage@5 does not double anywhere on this curve (classifier: "
                 f"{base_cov:.1f} %, best {sweep['coverage@5'].max():.1f} %).")

    from featagg_core.artifacts import artifact_bytes
    st.download_button("Download the fitted REFRAG (artifact)",
                       data=artifact_bytes(ref, dataset_fingerprint=fp,
                                           metrics={k: float(r[k]) for k in table.columns}),
                       file_name="refrag.fgz", mime="application/zip", key="rl_dl_refrag")

# ---------------------------------------------------------------------------
# FIAT
# ---------------------------------------------------------------------------
with tab_f:
    from featagg_core.fiat import Fiat, erase_features, erasure_curve
    f1, f2, f3 = st.columns(3)
    p = f1.slider("fraction of features erased", 0.0, 0.9, 0.5, 0.1, key="rl_p")
    mix = f2.slider("mix — weight of imputed values", 0.0, 1.0, 0.5, 0.05, key="rl_mix")
    fnorm = f3.selectbox("C^F normalisation", ["cosine", "conditional", "row", "none"],
                         key="rl_fnorm")
    n_eval = min(Xt.shape[0], 1000)
    Xs, Ys = Xt[:n_eval], Yt[:n_eval]
    try:
        t0 = time.perf_counter()
        fiat = memo(("fiat", id(dfg), fp, fnorm),
                    lambda: Fiat(dfg, normalization=fnorm).fit(X))
        t_ffit = time.perf_counter() - t0
        fiat.set_params(mix=float(mix))
        predict = (lambda Z: clf.predict_scores(Z, k=5))
        Xe = erase_features(Xs, float(p), random_state=0)
        t0 = time.perf_counter()
        Xi = fiat.transform(Xe)
        t_imp = time.perf_counter() - t0
        pk = {name: M.precision_at_k(Ys, predict(Z), list(rv.KS)) * 100
              for name, Z in (("clean", Xs), ("erased", Xe), ("FIAT", Xi))}
    except Exception as exc:  # noqa: BLE001
        session.show_error(exc)
        st.stop()
    cols = st.columns(3)
    cols[0].metric("P@1 on complete points", f"{pk['clean'][0]:.2f} %", border=True)
    cols[1].metric(f"P@1 with {p:.0%} erased", f"{pk['erased'][0]:.2f} %",
                   f"{pk['erased'][0] - pk['clean'][0]:+.2f}", border=True)
    cols[2].metric("P@1 erased + FIAT", f"{pk['FIAT'][0]:.2f} %",
                   f"{pk['FIAT'][0] - pk['erased'][0]:+.2f} vs erased", border=True)
    lost = pk["clean"][0] - pk["erased"][0]
    if lost > 0:
        st.write(f"FIAT recovers {100 * (pk['FIAT'][0] - pk['erased'][0]) / lost:.0f} % of the "
                 f"P@1 lost to erasure (imputation took {t_imp * 1e3:.0f} ms for "
                 f"{n_eval:,} points).")
    run_key = ("fiat", fp, id(clf), id(dfg), float(p), float(mix), fnorm)
    recorded = st.session_state.setdefault(_RECORDED, set())
    if run_key not in recorded:
        recorded.add(run_key)
        mets = {}
        for name in ("clean", "erased", "FIAT"):
            for i, k in enumerate(rv.KS):
                mets[f"P@{k} {name}"] = float(pk[name][i])
        session.record_run(PAGE, "FIAT", data, {**fiat.get_params(), "erased": float(p)},
                           mets, {"fit_s": t_ffit, "impute_s": t_imp},
                           model_size_bytes=int(fiat.operator_.data.nbytes
                                                + fiat.operator_.indices.nbytes))

    st.subheader("Precision as features are erased")

    def _curve():
        bar = st.progress(0.0, text="Erasure curve…")
        df = erasure_curve(predict, Xs, Ys, fiat=fiat,
                           fractions=[round(0.1 * i, 1) for i in range(10)], k=rv.KS,
                           random_state=0, progress=lambda d, t: bar.progress(d / t))
        bar.empty()
        return df
    curve = memo(("curve", id(clf), id(fiat), float(mix), fp, n_eval), _curve)
    st.plotly_chart(rv.erasure_figure(curve), width="stretch")
    st.caption(f"On the first {n_eval:,} test points; the same random erasure (seed 0) for "
               "every method, nested across fractions.")

    st.subheader("One point, before and after")
    i = st.number_input("test point", 0, max(n_eval - 1, 0), 0, 1, key="rl_point")
    ex = rv.imputation_example(Xs[i], Xe[i], Xi[i], fiat.labels_, feature_names)
    counts = rv.status_counts(ex)
    ex = ex.head(30)
    st.write(f"Kept {counts['kept']}, erased and restored {counts['erased, restored']}, "
             f"erased and lost {counts['erased, lost']}, newly imputed "
             f"{counts['imputed (new)']} (first 30 rows shown). The cluster column says which "
             "DEFRAG cluster each imputed value came from.")
    st.dataframe(ex.style.format({"original": "{:.3g}", "after erasure": "{:.3g}",
                                  "after FIAT": "{:.3g}"}), width="stretch", hide_index=True)
    from featagg_core.artifacts import artifact_bytes
    st.download_button("Download the fitted FIAT (artifact)",
                       data=artifact_bytes(fiat, dataset_fingerprint=fp),
                       file_name="fiat.fgz", mime="application/zip", key="rl_dl_fiat")
