"""Rare labels page: its table/figure builders against brute force, and AppTest runs."""
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from featagg_app import rare_labels_view as rv
from featagg_core import metrics as M
from featagg_core.data import MultiLabelData

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "rare_labels.py")


def _scores(n, L, seed, density=0.6):
    rng = np.random.default_rng(seed)
    S = sp.random(n, L, density=density, format="csr", random_state=rng)
    S.data = rng.uniform(0.01, 1.0, S.nnz)
    return S


def _labels(n, L, seed):
    rng = np.random.default_rng(seed)
    P = rng.random((n, L)) < (0.8 / (np.arange(L) + 1) ** 0.7)[None, :]
    return sp.csr_matrix(P.astype(np.float32))


def _dense_top(S, k):
    D = S.toarray() if sp.issparse(S) else np.asarray(S)
    stored = (S != 0).toarray() if sp.issparse(S) else np.ones_like(D, bool)
    out = []
    for i in range(D.shape[0]):
        idx = np.flatnonzero(stored[i])
        out.append(sorted(idx, key=lambda l: (-D[i, l], l))[:k])
    return out


def test_covered_labels_and_bucket_table_brute_force():
    Ytr, Yte = _labels(200, 20, 0), _labels(60, 20, 1)
    S, R = _scores(60, 20, 2), _scores(60, 20, 3)
    top = _dense_top(S, 5)
    Yd = Yte.toarray()
    hit = np.zeros(20, bool)
    for i, row in enumerate(top):
        for l in row:
            hit[l] |= Yd[i, l] == 1
    np.testing.assert_array_equal(rv.covered_labels(Yte, S, 5), hit)
    bt = rv.bucket_table(Ytr, Yte, {"a": S, "b": R}, k=5, n_buckets=5)
    b = M.label_frequency_buckets(Ytr, 5)
    present = Yd.sum(0) > 0
    for i in range(5):
        m = (b == i) & present
        exp = 100 * hit[m].sum() / m.sum() if m.sum() else np.nan
        np.testing.assert_allclose(bt["coverage a"][i], exp)
    assert bt["labels"].sum() == 20
    np.testing.assert_allclose(bt["P@5 a"].sum(), M.precision_at_k(Yte, S, 5) * 100)
    np.testing.assert_allclose(bt["P@5 b"].sum(), M.precision_at_k(Yte, R, 5) * 100)
    fig = rv.bucket_figure(bt, ["a", "b"])
    assert len(fig.data) == 2 and list(fig.data[0].x) == list(bt["bucket"])


def test_rare_examples_are_new_correct_labels_rarest_first():
    Ytr, Yte = _labels(300, 25, 4), _labels(80, 25, 5)
    S, R = _scores(80, 25, 6), _scores(80, 25, 7)
    ex = rv.rare_examples(Ytr, Yte, S, R, [f"t{j}" for j in range(25)], k=5, max_rows=500)
    tb, tr = _dense_top(S, 5), _dense_top(R, 5)
    Yd = Yte.toarray()
    expected = {(i, l) for i in range(80) for l in tr[i] if Yd[i, l] == 1 and l not in tb[i]}
    got = {(int(i), int(n[1:])) for i, n in zip(ex["test point"], ex["label"])}
    assert got == expected and len(ex) == len(expected) > 0
    assert list(ex["train examples"]) == sorted(ex["train examples"])
    for _, row in ex.iterrows():
        l = int(row["label"][1:])
        assert row["REFRAG rank"] == tr[row["test point"]].index(l) + 1
        full = _dense_top(S[row["test point"]], 1000)[0]
        assert row["base rank"] == (str(full.index(l) + 1) if l in full else "not shortlisted")


def test_imputation_example_statuses():
    orig = sp.csr_matrix(np.array([[1.0, 2.0, 0.0, 3.0, 0.0]]))
    erased = sp.csr_matrix(np.array([[1.0, 0.0, 0.0, 0.0, 0.0]]))
    imputed = sp.csr_matrix(np.array([[1.0, 0.5, 0.0, 0.0, 0.25]]))
    ex = rv.imputation_example(orig, erased, imputed, np.array([0, 0, 1, 1, 0]),
                               ["a", "b", "c", "d", "e"])
    st = dict(zip(ex["feature"], ex["status"]))
    assert st == {"a": "kept", "b": "erased, restored", "d": "erased, lost",
                  "e": "imputed (new)"}
    assert list(ex["status"])[0] == "erased, restored"
    assert rv.status_counts(ex) == {"kept": 1, "erased, restored": 1, "erased, lost": 1,
                                    "imputed (new)": 1}
    assert dict(zip(ex["feature"], ex["cluster"])) == {"a": 0, "b": 0, "d": 1, "e": 0}


def test_train_test_split_and_figures():
    X = sp.random(50, 8, density=0.3, format="csr", random_state=0)
    Y = _labels(50, 5, 0)
    d = MultiLabelData(X=X, Y=Y, name="t")
    Xtr, Ytr, Xte, Yte, note = rv.train_test(d)
    assert Xtr.shape[0] + Xte.shape[0] == 50 and Xte.shape[0] == 10 and "random" in note
    d2 = MultiLabelData(X=X, Y=Y, X_test=X[:5], Y_test=Y[:5], name="t")
    assert rv.train_test(d2)[2].shape[0] == 5
    sweep = pd.DataFrame({"alpha": [1.0, 0.5, 0.0], "P@5": [50, 48, 30],
                          "coverage@5": [20, 30, 40]})
    assert len(rv.sweep_figure(sweep, 0.5).data) == 2
    curve = pd.DataFrame({"fraction": [0, 0.5], **{f"P@{k}": [0.5, 0.4] for k in rv.KS},
                          **{f"P@{k} FIAT": [0.5, 0.45] for k in rv.KS}})
    assert len(rv.erasure_figure(curve).data) == 6


# ---------------------------------------------------------------------------
# the page (AppTest)
# ---------------------------------------------------------------------------

def _small():
    from featagg_core.synthetic import make_powerlaw_multilabel
    d = make_powerlaw_multilabel(500, 300, 40, avg_labels=3, avg_features=15,
                                 test_size=0.3, random_state=1)
    d.name = "small synthetic"
    return d


class LinearScorer:
    """A fixed 'classifier': scores X @ W, keeps each row's top k (the page only needs
    predict_scores)."""

    def __init__(self, W):
        self.W = W
        self.n_labels_ = W.shape[1]

    def predict_scores(self, X, k=5):
        D = (sp.csr_matrix(X) @ self.W).toarray()
        top = np.argsort(-D, axis=1, kind="stable")[:, :k]
        rows = np.repeat(np.arange(D.shape[0]), top.shape[1])
        vals = np.maximum(np.take_along_axis(D, top, 1).ravel(), 1e-9)
        return sp.csr_matrix((vals, (rows, top.ravel())), shape=D.shape)


def _app(data, store=None):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(PAGE, default_timeout=150)
    at.session_state["featagg.dataset"] = {"data": data, "fingerprint": data.fingerprint,
                                           "origin": "sample", "name": data.name}
    if store is not None:
        at.session_state["featagg.store"] = store
    return at


def test_page_trains_defaults_then_alpha_one_is_the_classifier():
    data = _small()
    at = _app(data).run()
    assert not at.exception, at.exception
    assert any("trained on this page" in i.value for i in at.info)
    assert at.title[0].value == "Rare labels and imputation"
    labels = [m.label for m in at.metric]
    assert "coverage@5 with REFRAG" in labels and "P@1 erased + FIAT" in labels
    runs = at.session_state["featagg.runs"]
    assert {r["method"] for r in runs} == {"REFRAG", "FIAT"}
    assert len(at.get("download_button")) == 2
    n_runs = len(runs)
    at.slider(key="rl_alpha").set_value(1.0).run()
    assert not at.exception, at.exception
    df = at.dataframe[0].value
    np.testing.assert_allclose(df.loc["REFRAG"].to_numpy(), df.loc["classifier"].to_numpy())
    assert len(at.session_state["featagg.runs"]) == n_runs + 1
    at.run()                                          # same settings: no duplicate run
    assert len(at.session_state["featagg.runs"]) == n_runs + 1


def test_page_uses_session_models_and_matches_the_library():
    from featagg_core.fiat import Fiat, erase_features
    from featagg_core.refrag import Refrag
    data = _small()
    d = data.X.shape[1]
    clus = type("C", (), {})()
    clus.labels_ = np.arange(d) // 5
    clus.n_clusters_ = int(clus.labels_.max()) + 1
    W = sp.csr_matrix(data.X.T @ data.Y)                # a crude centroid classifier
    clf = LinearScorer(W)
    at = _app(data, {"defrag": clus, "ktxmlc": clf}).run()
    assert not at.exception, at.exception
    assert not any("trained on this page" in i.value for i in at.info)
    # the page's REFRAG numbers are the library's on the same inputs
    S = clf.predict_scores(data.X_test, k=100)
    R = Refrag().fit(data.X, data.Y, clus).rerank(data.X_test, S, k=5)
    df = at.dataframe[0].value
    np.testing.assert_allclose(df.loc["REFRAG", "P@5"],
                               M.precision_at_k(data.Y_test, R, 5) * 100)
    np.testing.assert_allclose(df.loc["classifier", "coverage@5"],
                               M.coverage_at_k(data.Y_test, S, 5) * 100)
    # FIAT card: P@1 of the erased + imputed first 1000 test points
    Xs, Ys = data.X_test[:1000], data.Y_test[:1000]
    Xi = Fiat(clus).fit(data.X).transform(erase_features(Xs, 0.5, random_state=0))
    card = [m for m in at.metric if m.label == "P@1 erased + FIAT"][0]
    assert card.value == f"{M.precision_at_k(Ys, clf.predict_scores(Xi, k=5), 1) * 100:.2f} %"
