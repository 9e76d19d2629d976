"""Leak tests for every page path, driven as a person uses the pages (AppTest).

Each test drives the pages on a small dataset, then — in a fresh session — on a copy whose
held-out rows (test and validation) have permuted labels and erased features. The split's
rows depend only on the row count and the seed, so both sessions split the same rows. If
no fitted step ever saw a held-out row, every fitted step of every run is bit-identical
between the two sessions (its ``_artifact_state()`` arrays and meta). On top of that, the
estimators' ``fit`` methods are watched: the raw rows they are given never include a
held-out row, and every run was scored on exactly its split's test rows.

On the code before the run model these fail: the Feature agglomeration page fitted
DEFRAG-XY on *all* rows (``Defrag.fit(X, Y)`` of the whole dataset), Extreme classification
reused that clustering under its own random split, and Rare labels drew another random
split from the same permutation with a different fraction (so its classifier trained on
rows it then scored). See ``test_old_pages_leak`` for the first of these, checked on the
old page's own stored model.
"""
import hashlib
import json

import numpy as np
import pytest
import scipy.sparse as sp

from page_util import carry, click, ok, runs, widget
from featagg_core.data import CategoricalData, GraphData, MultiLabelData
from featagg_core.experiment import make_split
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)

SPLIT = {"test_size": 0.25, "valid_size": 0.1, "random_state": 3, "how": None}


# ----------------------------------------------------------------------------- data
def _held_out(data):
    s = make_split(data, SPLIT["test_size"], SPLIT["valid_size"], SPLIT["random_state"])
    return s, np.sort(np.concatenate([s.test, s.valid]))


def _perturbed_multilabel(data):
    """Held-out rows: features erased, labels permuted (rows and label columns)."""
    _, rows = _held_out(data)
    rng = np.random.default_rng(7)
    X = data.X.tolil(copy=True)
    X[rows] = 0
    Y = data.Y.toarray()
    Y[rows] = Y[rng.permutation(rows)][:, rng.permutation(Y.shape[1])]
    return MultiLabelData(X=sp.csr_matrix(X, dtype=np.float32),
                          Y=sp.csr_matrix(Y, dtype=np.float32),
                          feature_names=data.feature_names, label_names=data.label_names,
                          name=data.name + " (perturbed)")


def _perturbed_graph(data):
    _, rows = _held_out(data)
    rng = np.random.default_rng(7)
    X = data.X.tolil(copy=True)
    X[rows] = 0
    y = np.asarray(data.y).copy()
    y[rows] = y[rng.permutation(rows)]
    return GraphData(A=data.A, X=sp.csr_matrix(X), y=y, feature_names=data.feature_names,
                     name=data.name + " (perturbed)")


def _perturbed_table(data):
    _, rows = _held_out(data)
    rng = np.random.default_rng(7)
    table = data.table.copy()
    for c in table.columns:
        table.loc[rows, c] = "erased"
    labels = np.asarray(data.labels).copy()
    labels[rows] = labels[rng.permutation(rows)]
    return CategoricalData(table=table, labels=labels, label_name=data.label_name,
                           name=data.name + " (perturbed)")


# ----------------------------------------------------------------------------- watching fits
def _row_hashes(X) -> list:
    X = sp.csr_matrix(X)
    X.sort_indices()
    out = []
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        out.append(hashlib.sha1(X.indices[a:b].tobytes()
                                + np.asarray(X.data[a:b], np.float64).tobytes()).hexdigest())
    return out


@pytest.fixture
def watched_fits(monkeypatch):
    """Every raw-feature fit of DEFRAG, REFRAG, FIAT, KTXMLC/one-vs-all and BMGUFS (``fit``
    and ``fit_gamma_grid``) while a test runs: (class, row hashes of the X it was given)."""
    from featagg_core.graph import bmgufs
    from featagg_core.agglomeration import defrag, fiat, refrag
    from featagg_core.xmlc import ktxmlc
    seen = []

    def watch(cls, x_pos, method="fit"):
        orig = getattr(cls, method)

        def fit(self, *args, **kw):
            X = args[x_pos] if len(args) > x_pos else kw.get("X")
            seen.append((cls.__name__, _row_hashes(X)))
            return orig(self, *args, **kw)
        monkeypatch.setattr(cls, method, fit)

    for cls, pos in ((defrag.Defrag, 0), (refrag.Refrag, 0), (fiat.Fiat, 0),
                     (ktxmlc.KTXMLC, 0), (ktxmlc.OneVsAll, 0), (bmgufs.BMGUFS, 1)):
        watch(cls, pos)
    # the graph page walks BMGUFS down the gamma grid (fit_gamma_grid does not call fit)
    watch(bmgufs.BMGUFS, 1, "fit_gamma_grid")
    return seen


def _assert_fits_saw_no_held_out_row(seen, X, held_out, train, raw=("Defrag", "Refrag",
                                                                     "Fiat", "BMGUFS")):
    hashes = _row_hashes(X)
    train_h = {hashes[i] for i in train}
    # rows whose content also occurs among the training rows cannot be told apart
    held_h = {hashes[i] for i in held_out} - train_h
    assert len(held_h) > 0.8 * len(held_out), "test data should have distinct rows"
    assert seen, "no fit was watched"
    for name, rows in seen:
        if name in raw:
            assert not (set(rows) & held_h), f"{name}.fit saw held-out rows"
            assert len(rows) <= len(train), (name, len(rows), len(train))
        else:                             # fitted on agglomerated features: count only
            assert len(rows) == len(train), (name, len(rows), len(train))


# ----------------------------------------------------------------------------- comparing runs
def _fitted_meta(value):
    """Meta without what is not fitted state: wall-clock times (``train_time_``,
    ``timings_``, ``seconds``), and at the top the split id and dataset fingerprint
    (which differ between the two datasets by construction)."""
    if isinstance(value, dict):
        return {k: _fitted_meta(v) for k, v in value.items()
                if not any(t in str(k) for t in ("time", "timing", "seconds"))}
    if isinstance(value, list):
        return [_fitted_meta(v) for v in value]
    return value


def _state(pipe):
    meta, arrays = pipe._artifact_state()
    meta = {k: v for k, v in meta.items() if k not in ("split_id", "dataset_fingerprint")}
    return _fitted_meta(json.loads(json.dumps(meta, sort_keys=True, default=str))), arrays


def _assert_same_fits(runs_a, runs_b):
    assert [r.name for r in runs_a] == [r.name for r in runs_b]
    for ra, rb in zip(runs_a, runs_b):
        ma, aa = _state(ra.pipeline)
        mb, ab = _state(rb.pipeline)
        assert ma == mb, ra.name
        assert sorted(aa) == sorted(ab), ra.name
        for k in aa:
            a, b = np.asarray(aa[k]), np.asarray(ab[k])
            assert a.dtype == b.dtype and a.shape == b.shape, (ra.name, k)
            assert np.array_equal(a, b), f"{ra.name}: fitted array {k} differs"


def _assert_scored_on_test_rows(session_runs, split):
    for r in session_runs:
        assert r.status == "done", (r.name, r.message)
        assert r.split_id == split.split_id and r.pipeline.split_id == split.split_id
        assert np.intersect1d(r.split.train, r.split.test).size == 0
        assert np.intersect1d(r.split.train, r.split.valid).size == 0
        assert r.metrics["test"]["n_rows"] == split.test.size, r.name
        assert r.metrics["valid"]["n_rows"] == split.valid.size, r.name


def _with_split(data):
    return {"featagg.split_settings": {data.fingerprint: dict(SPLIT)}}


# ----------------------------------------------------------------------------- multi-label
def _drive_multilabel(app_for, data):
    """Feature agglomeration → Extreme classification on DEFRAG features → Rare labels
    (REFRAG and FIAT) in one session; returns its runs."""
    at = app_for("feature_agglomeration", data, state=_with_split(data)).run()
    click(at, "fa_run")
    ok(at)
    at = app_for("extreme_classification", state=carry(at)).run()
    widget(at.number_input, "xmlc_trees").set_value(1)
    at.radio(key="xmlc_features").set_value("agglomerated (DEFRAG)").run()
    assert any("Using the DEFRAG clustering" in i.value for i in at.info)
    click(at, "xmlc_train")
    ok(at)
    at = app_for("rare_labels", state=carry(at)).run()
    ok(at)
    # fixed alpha, gamma, beta: tuned ones are chosen on the validation rows by design (held
    # out here, so perturbing them may change the choice); that the test rows never
    # influence the tuning is tests/test_refrag_tuning.py's
    widget(at.toggle, "rl_tune").set_value(False)
    at.run()
    click(at, "rl_refrag_run")
    click(at, "rl_fiat_run")
    ok(at)
    return runs(at)


def test_multilabel_pages_fit_on_training_rows_only(watched_fits, app_for):
    data = make_powerlaw_multilabel(400, 150, 25, avg_features=15, random_state=4)
    data.name = "leak test"
    split, held = _held_out(data)
    got = _drive_multilabel(app_for, data)
    names = [r.name for r in got]
    # 25 labels fit one leaf (the page's leaf size is min(100, L), off KTXMLC's default):
    # the classifier is one flat tree, and its name says so
    flat = "KTXMLC K=16 T=1 leaf=25 · DEFRAG d0=8 → one flat tree"
    assert names[0] == "DEFRAG-XY d0=8" and any(n.startswith(flat) for n in names), names
    assert any("REFRAG" in n for n in names) and any("FIAT" in n for n in names)
    assert any(n.startswith("random balanced") for n in names)
    _assert_scored_on_test_rows(got, split)
    _assert_fits_saw_no_held_out_row(watched_fits, data.X, held, split.train)
    # the classifier on DEFRAG features reused the agglomeration run's fitted DEFRAG
    clf = next(r for r in got if r.name.startswith(flat))
    assert clf.reused == ["defrag"] and clf.pipeline.defrag is got[0].pipeline.defrag

    other = _drive_multilabel(app_for, _perturbed_multilabel(data))
    _assert_same_fits(got, other)
    # and the held-out rows were really changed: the test metrics differ
    assert got[0].metrics["test"] != other[0].metrics["test"]


# ----------------------------------------------------------------------------- graph
def _drive_graph(app_for, data):
    at = app_for("graph_features", data, state=_with_split(data)).run()
    widget(at.number_input, "gf_k").set_value(3)
    widget(at.number_input, "gf_cand").set_value(2)
    widget(at.number_input, "gf_iter").set_value(30)
    widget(at.number_input, "gf_d").set_value(10)
    click(at, "gf_run")
    ok(at)
    return runs(at)


def test_graph_page_fits_on_training_nodes_only(watched_fits, app_for):
    data = make_attributed_sbm(240, 3, p_in=0.1, p_out=0.01, n_informative=24, n_noise=36,
                               random_state=2)
    data.name = "leak graph"
    split, held = _held_out(data)
    got = _drive_graph(app_for, data)
    assert [r.name for r in got] == ["BMGUFS d=10 β̄=0.6 γ=2 k=3 iterations=30 candidates=2"]
    _assert_scored_on_test_rows(got, split)
    _assert_fits_saw_no_held_out_row(watched_fits, data.X, held, split.train)
    assert got[0].pipeline.selector.block_model_.labels_.shape == (split.train.size,)
    _assert_same_fits(got, _drive_graph(app_for, _perturbed_graph(data)))


# ----------------------------------------------------------------------------- table
def _drive_table(app_for, data):
    at = app_for("vocabulary", data, state=_with_split(data)).run()
    widget(at.checkbox, "vc_curves").set_value(False)
    widget(at.multiselect, "vc_methods").set_value(["submodular", "frequency", "divisive"])
    click(at, "vc_run")
    ok(at)
    return sorted(runs(at), key=lambda r: r.name)


def test_vocabulary_page_counts_training_rows_only(app_for):
    data = make_zipf_categorical(4000, 60, n_columns=2, random_state=5)
    data.name = "leak table"
    split, held = _held_out(data)
    got = _drive_table(app_for, data)
    assert len(got) == 3
    _assert_scored_on_test_rows(got, split)
    # the fitted value counts are the training rows' counts, by hand
    col = data.table.columns[0]
    vc = got[0].pipeline.vocabulary.compressors[col]
    train_vals = data.table[col].to_numpy()[split.train]
    assert int(vc.counts_.sum()) == split.train.size
    assert set(vc.vocabulary_) == set(train_vals)
    _assert_same_fits(got, _drive_table(app_for, _perturbed_table(data)))


# ----------------------------------------------------------------------------- before
def test_old_pages_leak():
    """What the old Feature agglomeration page did, on the old page's own terms: it fitted
    DEFRAG-XY with ``Defrag(...).fit(X, Y)`` on every row of the dataset, so perturbing the
    rows another page later tested on changed the clustering the classifier reused. The
    same fit on the training rows (what the page does now) does not change."""
    from featagg_core.agglomeration.defrag import Defrag
    data = make_powerlaw_multilabel(400, 150, 25, avg_features=15, random_state=4)
    other = _perturbed_multilabel(data)
    split, _ = _held_out(data)
    old = [Defrag(d0=8).fit(d.X, d.Y).labels_ for d in (data, other)]
    assert not np.array_equal(*old)                       # the old page: a leak
    new = [Defrag(d0=8).fit(d.X[split.train], d.Y[split.train]).labels_
           for d in (data, other)]
    assert np.array_equal(*new)
