"""Builders for the "Rare labels and imputation" page (REFRAG and FIAT): tables and plotly
figures from already computed predictions. No streamlit here, so everything is unit-tested.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp

from featagg_core import metrics as M

from . import charts

KS = (1, 3, 5)
BUCKET_NAMES = ("head", "torso-head", "torso", "torso-tail", "tail")


def train_test(data, test_size=0.2, random_state=0):
    """(X, Y, X_test, Y_test, note): the dataset's own split, or a seeded random split."""
    if getattr(data, "X_test", None) is not None and data.X_test.shape[0] > 0 \
            and getattr(data, "Y_test", None) is not None:
        return data.X, data.Y, data.X_test, data.Y_test, "the dataset's own train/test split"
    n = data.X.shape[0]
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(n)
    n_test = max(1, int(round(test_size * n)))
    te, tr = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return (data.X[tr], data.Y[tr], data.X[te], data.Y[te],
            f"a random {100 * test_size:.0f} % test split (seed {random_state})")


def metrics_table(Y_test, scores: dict, inv_propensity) -> pd.DataFrame:
    """One row per method (``scores``: name -> score matrix): P@k, PSP@k, coverage@k in %."""
    rows = []
    for name, S in scores.items():
        flat = M.ranking_metrics(Y_test, S, KS, inv_propensity,
                                 metrics=("P", "PSP", "coverage"))
        rows.append({"method": name, **{key: 100 * v for key, v in flat.items()}})
    return pd.DataFrame(rows).set_index("method")


def bucket_table(Y_train, Y_test, scores: dict, k=5, n_buckets=5) -> pd.DataFrame:
    """Accuracy and coverage per label-frequency bucket (bucket 0 = head).

    Columns: bucket, labels, training examples per label (range), and for every method
    ``P@k <method>`` (the bucket's share of P@k, in %; the buckets add up to P@k) and
    ``coverage <method>`` (% of the bucket's labels present in the test set that are a
    correct top-k prediction for some test point).
    """
    b = M.label_frequency_buckets(Y_train, n_buckets)
    freq = np.asarray((Y_train != 0).sum(axis=0)).ravel()
    Yt = sp.csr_matrix(Y_test)
    present = np.asarray((Yt != 0).sum(axis=0)).ravel() > 0
    names = BUCKET_NAMES if n_buckets == 5 else tuple(f"bucket {i}" for i in range(n_buckets))
    out = pd.DataFrame({"bucket": list(names),
                        "labels": np.bincount(b, minlength=n_buckets),
                        "train examples / label": [
                            f"{freq[b == i].min()}–{freq[b == i].max()}" if np.any(b == i)
                            else "–" for i in range(n_buckets)]})
    for name, S in scores.items():
        out[f"P@{k} {name}"] = M.precision_by_bucket(Yt, S, b, k, n_buckets) * 100
        hit = covered_labels(Yt, S, k)
        cov = []
        for i in range(n_buckets):
            m = (b == i) & present
            cov.append(100.0 * hit[m].sum() / m.sum() if m.sum() else np.nan)
        out[f"coverage {name}"] = cov
    return out


def covered_labels(Y_test, S, k) -> np.ndarray:
    """Boolean (L,): labels that are a correct top-k prediction for some test point."""
    Yt = sp.csr_matrix(Y_test)
    top = M.top_k(S, k)
    rows = np.repeat(np.arange(top.shape[0]), top.shape[1])
    lab = top.ravel()
    ok = lab >= 0
    rows, lab = rows[ok], lab[ok]
    hits = np.asarray(Yt[rows, lab]).ravel() != 0
    out = np.zeros(Yt.shape[1], dtype=bool)
    out[lab[hits]] = True
    return out


def bucket_figure(table: pd.DataFrame, methods: Sequence[str], k=5) -> go.Figure:
    """Grouped bars: coverage@k per frequency bucket, one bar per method."""
    series = {m: table[f"coverage {m}"].round(2).tolist() for m in methods}
    return charts.grouped_bars(table["bucket"].tolist(), series,
                               title=f"Coverage@{k} by label-frequency bucket (head → tail)",
                               xlabel="labels grouped by training frequency",
                               ylabel=f"% of the bucket's labels found (coverage@{k})")


def rare_examples(Y_train, Y_test, base, reranked, label_names=None, k=5,
                  max_rows=10) -> pd.DataFrame:
    """Correct labels REFRAG put in a test point's top k that the base did not, rarest
    first: test point, label, training examples, base rank (or "not in top 100"),
    REFRAG rank."""
    freq = np.asarray((Y_train != 0).sum(axis=0)).ravel()
    Yt = sp.csr_matrix(Y_test)
    top_r = M.top_k(reranked, k)
    base_csr = sp.csr_matrix(base)
    top_b = M.top_k(base_csr, k)
    rows, labs, rr = [], [], []
    for r in range(k):
        lab = top_r[:, r]
        idx = np.flatnonzero(lab >= 0)
        hit = np.asarray(Yt[idx, lab[idx]]).ravel() != 0
        in_base = (top_b[idx] == lab[idx, None]).any(axis=1)
        sel = idx[hit & ~in_base]
        rows.append(sel)
        labs.append(lab[sel])
        rr.append(np.full(sel.size, r + 1))
    rows, labs, rr = (np.concatenate(a) if a else np.zeros(0, int) for a in (rows, labs, rr))
    if rows.size == 0:
        return pd.DataFrame(columns=["test point", "label", "train examples", "base rank",
                                     "REFRAG rank"])
    order = np.lexsort((rows, freq[labs]))[:max_rows]
    rows, labs, rr = rows[order], labs[order], rr[order]
    base_rank = []
    for i, lab in zip(rows, labs):
        a, b_ = base_csr.indptr[i], base_csr.indptr[i + 1]
        cols, vals = base_csr.indices[a:b_], base_csr.data[a:b_]
        pos = np.flatnonzero(cols == lab)
        if pos.size == 0:
            base_rank.append("not shortlisted")
        else:
            v = vals[pos[0]]
            base_rank.append(str(int(((vals > v) | ((vals == v) & (cols < lab))).sum()) + 1))
    names = [str(label_names[l]) if label_names is not None else f"label {l}" for l in labs]
    return pd.DataFrame({"test point": rows, "label": names, "train examples": freq[labs],
                         "base rank": base_rank, "REFRAG rank": rr})


def sweep_figure(sweep: pd.DataFrame, current_alpha: Optional[float] = None) -> go.Figure:
    """P@5 against coverage@5 over an alpha sweep (``sweep``: columns alpha, P@5,
    coverage@5), alpha written at every point; the current alpha highlighted."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sweep["coverage@5"], y=sweep["P@5"], mode="lines+markers+text",
                             text=[f"α={a:g}" if a in (1.0, 0.5, 0.0) else ""
                                   for a in sweep["alpha"]],
                             hovertext=[f"α={a:g}" for a in sweep["alpha"]],
                             textposition="top center", name="REFRAG, α from 1 (base) to 0",
                             marker=dict(color=charts.PALETTE[0])))
    if current_alpha is not None:
        cur = sweep[np.isclose(sweep["alpha"], current_alpha)]
        if len(cur):
            fig.add_trace(go.Scatter(x=cur["coverage@5"], y=cur["P@5"], mode="markers",
                                     name=f"current α = {current_alpha:g}",
                                     marker=dict(size=14, symbol="star",
                                                 color=charts.PALETTE[1])))
    return charts.style(fig, "Accuracy against coverage as α moves weight to the prototypes",
                        420, xlabel="coverage@5 (%)", ylabel="P@5 (%)")


def erasure_figure(curve: pd.DataFrame, ks=KS) -> go.Figure:
    """P@k against the erased fraction, without (dashed) and with FIAT (solid)."""
    fig = go.Figure()
    for i, k in enumerate(ks):
        c = charts.PALETTE[i % len(charts.PALETTE)]
        fig.add_trace(go.Scatter(x=curve["fraction"], y=curve[f"P@{k}"] * 100,
                                 mode="lines+markers", name=f"P@{k} erased",
                                 line=dict(color=c, dash="dash"), marker=dict(color=c)))
        fig.add_trace(go.Scatter(x=curve["fraction"], y=curve[f"P@{k} FIAT"] * 100,
                                 mode="lines+markers", name=f"P@{k} erased + FIAT",
                                 line=dict(color=c), marker=dict(color=c, symbol="diamond")))
    return charts.style(fig, "Precision as features are erased, with and without FIAT", 420,
                        xlabel="fraction of each point's features erased",
                        ylabel="precision (%)")


def imputation_example(x_orig, x_erased, x_imputed, clusters, feature_names=None,
                       max_rows=None) -> pd.DataFrame:
    """What FIAT did to one point: every feature that was there, was erased, or was
    imputed, with its cluster and value before / after. Status: "kept", "erased, restored",
    "erased, lost", "imputed (new)". Sorted: restored first, then new, lost, kept (by
    value after FIAT within a status); ``max_rows`` cuts the table."""
    def dense_row(v):
        v = sp.csr_matrix(v)
        out = {}
        for j, val in zip(v.indices, v.data):
            out[int(j)] = float(val)
        return out
    o, e, z = dense_row(x_orig), dense_row(x_erased), dense_row(x_imputed)
    feats = sorted(set(o) | set(z))
    rows = []
    rank = {"erased, restored": 0, "imputed (new)": 1, "erased, lost": 2, "kept": 3}
    for j in feats:
        if j in e:
            st = "kept"
        elif j in o:
            st = "erased, restored" if j in z else "erased, lost"
        else:
            st = "imputed (new)"
        name = str(feature_names[j]) if feature_names is not None else f"feature {j}"
        rows.append({"feature": name, "cluster": int(clusters[j]), "status": st,
                     "original": o.get(j, 0.0), "after erasure": e.get(j, 0.0),
                     "after FIAT": z.get(j, 0.0)})
    df = pd.DataFrame(rows, columns=["feature", "cluster", "status", "original",
                                     "after erasure", "after FIAT"])
    if len(df):
        df["_r"] = df["status"].map(rank)
        df = df.sort_values(["_r", "after FIAT"], ascending=[True, False]).drop(columns="_r")
    df = df.reset_index(drop=True)
    return df if max_rows is None else df.head(max_rows)


def status_counts(example: pd.DataFrame) -> dict:
    """Counts of each status in an :func:`imputation_example` table."""
    return {s: int((example["status"] == s).sum()) for s in
            ("kept", "erased, restored", "erased, lost", "imputed (new)")}
