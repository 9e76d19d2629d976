"""Leak tests: no fitted step of any run ever sees a held-out (validation or test) row.

For every spec family we fit twice: on the data, and on a copy whose held-out rows were
replaced (features erased and replaced by noise, labels shuffled and changed; for graphs
also their features, edges and classes; for tables their values and labels). The rows of a
split depend only on their number and the seed, so both fits use the same training rows,
and every fitted array of every step (``Pipeline._artifact_state()``) must be bit-identical.
On top, spies on the estimators' ``fit`` record the rows each one was given, and none of
them may be a held-out row (raw, or as the fitted agglomeration maps it).

``test_the_check_catches_a_fit_on_all_rows`` shows the same comparison fails for the old
behaviour (a DEFRAG / classifier fitted on every row, as the Feature agglomeration page and
``train`` on a file without a test part used to do).
"""
import hashlib
import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core import (
    BMGUFS,
    KTXMLC,
    Defrag,
    DefragKTXMLC,
    Fiat,
    OneVsAll,
    Refrag,
    VocabularyCompressor,
    load_artifact,
)
from featagg_core.agglomeration import clustering as fcl
from featagg_core.graph import baselines as fsb
from featagg_core.__main__ import main
from featagg_core.data import CategoricalData, GraphData, MultiLabelData, load_dataset, save_xc
from featagg_core.experiment import make_split, run_pipeline
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)


# ----------------------------------------------------------------------------- helpers
def _no_empty_rows(X, rng):
    """Continuous values (rows are unique) and at least one feature per row (an empty row
    would look like every other empty row to the spies)."""
    X = sp.csr_matrix(X, dtype=np.float32)
    X.data = (X.data * rng.uniform(0.5, 1.5, X.nnz)).astype(np.float32)
    empty = np.flatnonzero(np.diff(X.indptr) == 0)
    if empty.size:
        X = (X + sp.csr_matrix((np.ones(empty.size, np.float32),
                                (empty, rng.integers(0, X.shape[1], empty.size))),
                               shape=X.shape)).tocsr()
    return X


def _binary(M):
    M = sp.csr_matrix(M, dtype=np.float32)
    M.sum_duplicates()
    M.eliminate_zeros()
    M.data[:] = 1.0
    return M


def _mix_rows(keep_from, other, held, n):
    """Rows ``held`` from ``other``, the rest from ``keep_from`` (sparse)."""
    mask = np.zeros(n, np.float32)
    mask[held] = 1.0
    return sp.csr_matrix(sp.diags(1.0 - mask) @ keep_from + sp.diags(mask) @ other,
                         dtype=np.float32)


def _noise_like(X, rng, density=0.08):
    R = sp.random(X.shape[0], X.shape[1], density=density, format="csr", random_state=rng,
                  dtype=np.float32)
    R.data = rng.uniform(0.1, 3.0, R.nnz).astype(np.float32)
    return R


def _changed_labels(Y, rng):
    """Y's rows shuffled, plus random extra labels (label frequencies change too)."""
    perm = rng.permutation(Y.shape[0])
    extra = sp.random(Y.shape[0], Y.shape[1], density=0.05, format="csr", random_state=rng)
    return _binary(Y[perm] + extra)


def perturb_multilabel(data, split, seed=1):
    rng = np.random.default_rng(seed)
    n = data.X.shape[0]
    held = split.valid if split.own_test else np.concatenate([split.valid, split.test])
    X = _mix_rows(data.X, _noise_like(data.X, rng), held, n)
    Y = _binary(_mix_rows(data.Y, _changed_labels(data.Y, rng), held, n))
    Xt = Yt = None
    if split.own_test:
        Xt, Yt = _noise_like(data.X_test, rng), _changed_labels(data.Y_test, rng)
    return MultiLabelData(X=X, Y=Y, X_test=Xt, Y_test=Yt, name=data.name)


def perturb_graph(g, split, seed=1):
    rng = np.random.default_rng(seed)
    n = g.A.shape[0]
    held = np.concatenate([split.valid, split.test])
    keep = np.ones(n, bool)
    keep[held] = False
    A = g.A.tocoo()
    inside = keep[A.row] & keep[A.col]
    r = rng.integers(0, n, 4 * held.size)
    c = np.repeat(held, 4)
    rows = np.concatenate([A.row[inside], r, c])
    cols = np.concatenate([A.col[inside], c, r])
    A2 = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    A2 = (A2 > 0).astype(np.float64).tocsr()
    A2.setdiag(0)
    A2.eliminate_zeros()
    X = _mix_rows(g.X, _noise_like(g.X, rng, 0.2), held, n)
    y = np.asarray(g.y).copy()
    y[held] = rng.permutation(y[held])[::-1]
    y[held[: held.size // 3]] = -1                  # some held-out classes unknown
    return GraphData(A=A2, X=X, y=y, name=g.name)


def perturb_table(t, split, seed=1):
    rng = np.random.default_rng(seed)
    held = np.concatenate([split.valid, split.test])
    table = t.table.copy()
    for col in table.columns:
        vals = table[col].astype(object).to_numpy().copy()
        vals[held] = [f"held_{col}_{i}" for i in range(held.size)]
        table[col] = vals
    labels = np.asarray(t.labels).copy()
    labels[held] = rng.integers(0, 2, held.size)
    return CategoricalData(table=table, labels=labels.astype(np.int8), label_name=t.label_name,
                           name=t.name)


_VOLATILE = re.compile(r"time|seconds|timings|^split_id$|^dataset_fingerprint$")


def _stable(meta):
    if isinstance(meta, dict):
        return {k: _stable(v) for k, v in meta.items() if not _VOLATILE.search(str(k))}
    if isinstance(meta, list):
        return [_stable(v) for v in meta]
    return meta


def fitted_state(obj):
    """(meta without timings and ids, arrays) of a pipeline or estimator artifact state."""
    meta, arrays = obj._artifact_state()
    return _stable(json.loads(json.dumps(meta, default=lambda o: o.item()))), arrays


def same_fit(a, b) -> bool:
    ma, aa = fitted_state(a)
    mb, ab = fitted_state(b)
    if ma != mb or aa.keys() != ab.keys():
        return False
    for key in aa:
        x, y = np.asarray(aa[key]), np.asarray(ab[key])
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return False
    return True


def assert_same_fit(a, b):
    ma, aa = fitted_state(a)
    mb, ab = fitted_state(b)
    assert aa.keys() == ab.keys()
    for key in aa:
        x, y = np.asarray(aa[key]), np.asarray(ab[key])
        assert x.dtype == y.dtype and x.shape == y.shape, key
        assert x.tobytes() == y.tobytes(), f"fitted array {key} depends on held-out rows"
    assert ma == mb


def row_hashes(X):
    X = sp.csr_matrix(X, dtype=np.float32)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    out = set()
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        h = hashlib.sha1(X.indices[lo:hi].astype(np.int64).tobytes())
        h.update(X.data[lo:hi].tobytes())
        out.add(h.hexdigest())
    return out


@pytest.fixture
def spy(monkeypatch):
    """Records the rows every estimator is fitted on: a list of (name, row hashes, n)."""
    seen = []

    def wrap(owner, name, x_arg=0):
        orig = getattr(owner, name)

        def spied(*args, **kw):
            offset = 1 if isinstance(owner, type) else 0       # methods: args[0] is self
            X = args[offset + x_arg]
            seen.append((name if not isinstance(owner, type) else owner.__name__,
                         row_hashes(X) if sp.issparse(X) else set(), X.shape))
            return orig(*args, **kw)
        monkeypatch.setattr(owner, name, spied)

    for cls in (Defrag, KTXMLC, OneVsAll, DefragKTXMLC, Fiat, Refrag):
        wrap(cls, "fit")
    wrap(BMGUFS, "fit", x_arg=1)
    wrap(BMGUFS, "fit_gamma_grid", x_arg=1)     # pipelines keep nnz(r) >= d through it
    for fn in ("laplacian_score", "spec_score", "variance_score", "ndfs_score", "knn_graph"):
        wrap(fsb, fn)
    for fn in ("kmeans_feature_labels", "ward_feature_labels"):
        wrap(fcl, fn)
    return seen


def held_hashes(pipe, X_held):
    """The held-out rows as any fitted step could have been given them: raw, and mapped by
    every fitted agglomeration of the pipeline."""
    out = row_hashes(X_held)
    maps = [pipe.defrag, pipe.feature_clustering]
    maps += list(getattr(pipe.classifier, "defrags_", []))
    for m in maps:
        if m is not None:
            out |= row_hashes(m.transform(X_held))
    return out


def _held_X(data, split):
    parts = [data.X[split.valid]]
    parts.append(data.X_test if split.own_test else data.X[split.test])
    return sp.vstack(parts).tocsr()


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def ml_random():
    data = make_powerlaw_multilabel(300, 90, 18, avg_labels=3, avg_features=10, random_state=21)
    rng = np.random.default_rng(0)
    return MultiLabelData(X=_no_empty_rows(data.X, rng), Y=data.Y, name="random-split data")


@pytest.fixture(scope="module")
def ml_own():
    data = make_powerlaw_multilabel(320, 90, 18, avg_labels=3, avg_features=10,
                                    random_state=22, test_size=0.25)
    rng = np.random.default_rng(1)
    return MultiLabelData(X=_no_empty_rows(data.X, rng), Y=data.Y,
                          X_test=_no_empty_rows(data.X_test, rng), Y_test=data.Y_test,
                          name="own-split data")


CLF = {"n_trees": 1, "max_leaf_labels": 5}
MULTILABEL_SPECS = {
    "defrag XY": {"defrag": {"d0": 6}},
    "defrag X": {"defrag": {"d0": 6, "representation": "X"}},
    "ktxmlc raw": {"classifier": CLF},
    "ova raw": {"classifier": {"kind": "ova"}},
    "ktxmlc on defrag": {"defrag": {"d0": 6}, "classifier": CLF},
    "ova on defrag": {"defrag": {"d0": 6, "representation": "X"}, "classifier": {"kind": "ova"}},
    "per-tree ensemble": {"defrag": {"d0": 6, "per_tree": True},
                          "classifier": {"n_trees": 2, "max_leaf_labels": 5}},
    "+ refrag": {"defrag": {"d0": 6}, "classifier": CLF, "rerank": {"shortlist": 10}},
    "ova + refrag (own defrag)": {"classifier": {"kind": "ova"},
                                  "rerank": {"defrag": {"d0": 5}}},
    "+ fiat": {"defrag": {"d0": 6}, "classifier": CLF, "impute": {"mix": 0.5}},
    "ova + refrag + fiat": {"classifier": {"kind": "ova"}, "rerank": {}, "impute": {}},
    "kmeans": {"feature_clustering": {"kind": "kmeans", "n_clusters": 12}},
    "kmeans X": {"feature_clustering": {"kind": "kmeans", "n_clusters": 12,
                                        "representation": "X"}},
    "random balanced": {"feature_clustering": {"kind": "random_balanced", "n_clusters": 12}},
    "ward": {"feature_clustering": {"kind": "ward", "n_clusters": 12}},
}


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("own", [False, True], ids=["random split", "own split"])
@pytest.mark.parametrize("name", list(MULTILABEL_SPECS))
def test_multilabel_steps_never_see_held_out_rows(name, own, ml_random, ml_own, spy):
    data = ml_own if own else ml_random
    spec = MULTILABEL_SPECS[name]
    split = make_split(data, test_size=0.25, valid_size=0.15, random_state=3)
    other = perturb_multilabel(data, split)
    split2 = make_split(other, test_size=0.25, valid_size=0.15, random_state=3)
    for part in ("train", "valid", "test"):
        np.testing.assert_array_equal(getattr(split, part), getattr(split2, part))
    assert split2.split_id != split.split_id
    a = run_pipeline(data, split, spec)
    n_fits = len(spy)
    b = run_pipeline(other, split2, spec)
    assert a.status == b.status == "done", (a.message, b.message)
    assert_same_fit(a.pipeline, b.pipeline)
    # the spies: every estimator got training rows only, never a held-out one (a random
    # balanced partition looks at no row at all)
    assert n_fits > 0 or name == "random balanced"
    for data_, split_, run, fits in ((data, split, a, spy[:n_fits]),
                                     (other, split2, b, spy[n_fits:])):
        held = held_hashes(run.pipeline, _held_X(data_, split_))
        for est, rows, shape in fits:
            if est in ("kmeans_feature_labels", "ward_feature_labels"):
                if spec["feature_clustering"].get("representation") == "X":
                    assert shape[1] == split_.train.size     # R = X[train]^T
                continue
            assert shape[0] == split_.train.size, est
            assert not (rows & held), f"{est} was fitted on held-out rows"
    assert a.metrics["test"]["n_rows"] == split.test.size


GRAPH_SPECS = {
    "bmgufs": {"feature_selection": {"d": 6, "n_candidates": 2, "max_iter": 25}},
    "bmgufs k given": {"feature_selection": {"d": 6, "n_blocks": 3, "n_candidates": 2,
                                             "max_iter": 25, "block_init": "random"}},
    "laplacian graph": {"feature_selection": {"kind": "laplacian", "d": 6}},
    "spec knn": {"feature_selection": {"kind": "spec", "d": 6}},
    "variance": {"feature_selection": {"kind": "variance", "d": 6}},
}


@pytest.fixture(scope="module")
def graph():
    g = make_attributed_sbm(150, 3, p_in=0.2, p_out=0.01, n_informative=8, n_noise=20,
                            random_state=5)
    return GraphData(A=g.A, X=_no_empty_rows(g.X, np.random.default_rng(2)), y=g.y, name="sbm")


@pytest.mark.parametrize("name", list(GRAPH_SPECS))
def test_graph_selection_never_sees_held_out_nodes(name, graph, spy):
    spec = GRAPH_SPECS[name]
    split = make_split(graph, test_size=0.25, valid_size=0.1, random_state=1)
    other = perturb_graph(graph, split)
    split2 = make_split(other, test_size=0.25, valid_size=0.1, random_state=1)
    np.testing.assert_array_equal(split.train, split2.train)
    a = run_pipeline(graph, split, spec)
    n_fits = len(spy)
    b = run_pipeline(other, split2, spec)
    assert a.status == b.status == "done", (a.message, b.message)
    assert_same_fit(a.pipeline, b.pipeline)
    np.testing.assert_array_equal(a.pipeline.selected_, b.pipeline.selected_)
    assert n_fits > 0
    for g, s, fits in ((graph, split, spy[:n_fits]), (other, split2, spy[n_fits:])):
        held = row_hashes(g.X[np.concatenate([s.valid, s.test])])
        for est, rows, shape in fits:
            assert shape[0] == s.train.size, est
            assert not (rows & held), f"{est} was fitted on held-out nodes"


@pytest.mark.parametrize("vocab", [{"budget": 6}, {"budget": 6, "allocation": "greedy"},
                                   {"budget": 6, "method": "frequency"}])
def test_vocabulary_counts_never_see_held_out_rows(vocab, monkeypatch):
    t = make_zipf_categorical(1500, 80, n_columns=2, random_state=4)
    split = make_split(t, valid_size=0.1, random_state=2)
    other = perturb_table(t, split)
    split2 = make_split(other, valid_size=0.1, random_state=2)
    sizes = []
    orig = VocabularyCompressor.fit_counts

    def fit_counts(self, vocabulary, c0, c1):
        sizes.append(int(np.sum(c0) + np.sum(c1)))
        return orig(self, vocabulary, c0, c1)
    orig_fit = VocabularyCompressor.fit

    def fit(self, values, labels):
        sizes.append(len(values))
        return orig_fit(self, values, labels)
    monkeypatch.setattr(VocabularyCompressor, "fit_counts", fit_counts)
    monkeypatch.setattr(VocabularyCompressor, "fit", fit)
    a = run_pipeline(t, split, {"vocabulary": vocab})
    b = run_pipeline(other, split2, {"vocabulary": vocab})
    assert a.status == b.status == "done"
    assert_same_fit(a.pipeline, b.pipeline)
    assert sizes and set(sizes) == {split.train.size}
    for vc in b.pipeline.vocabulary.compressors.values():
        assert not any(str(v).startswith("held_") for v in vc.vocabulary_.tolist())
    # the held-out values are unseen at scoring time
    assert b.metrics["test"]["n_rows"] == split.test.size


def test_cli_train_and_agglomerate_fit_training_rows_only(ml_random, tmp_path, capsys):
    split = make_split(ml_random, test_size=0.25, random_state=4)
    other = perturb_multilabel(ml_random, split)
    paths = []
    for i, d in enumerate((ml_random, other)):
        p = tmp_path / f"d{i}.txt"
        save_xc(d, p)
        paths.append(p)
    # what the CLI reads back is the data (the XC text round trip is exact enough)
    back = load_dataset(paths[1])
    assert make_split(back, test_size=0.25, random_state=4).train.tolist() == split.train.tolist()
    arts = []
    for i, p in enumerate(paths):
        for cmd in (["train", str(p), "--defrag", "6", "--refrag", "--n-trees", "1",
                     "--max-leaf-labels", "5", "--out", str(tmp_path / f"m{i}.fgz")],
                    ["agglomerate", str(p), "--d0", "6", "--out", str(tmp_path / f"a{i}.fgz")]):
            assert main(cmd + ["--test-size", "0.25", "--split-seed", "4"]) == 0
            out = json.loads(capsys.readouterr()[0])
            assert out["split"]["n_test"] == split.test.size
        arts.append((load_artifact(tmp_path / f"m{i}.fgz"), load_artifact(tmp_path / f"a{i}.fgz")))
    assert_same_fit(arts[0][0], arts[1][0])          # the Pipeline artifacts of train
    assert_same_fit(arts[0][1], arts[1][1])          # the Defrag artifacts of agglomerate
    # evaluate remakes the training split from the artifact and scores the test rows
    assert main(["evaluate", str(tmp_path / "m0.fgz"), str(paths[0])]) == 0
    ev = json.loads(capsys.readouterr()[0])
    assert ev["n"] == split.test.size and ev["split"]["split_id"] == \
        make_split(load_dataset(paths[0]), test_size=0.25, random_state=4).split_id


def test_the_check_catches_a_fit_on_all_rows(ml_random):
    """The comparison above is not vacuous: the old behaviour (fitting on every row of a
    dataset without a test part) fails it."""
    split = make_split(ml_random, test_size=0.25, valid_size=0.15, random_state=3)
    other = perturb_multilabel(ml_random, split)
    # the old Feature agglomeration page: Defrag(...).fit(data.X, data.Y)
    assert not same_fit(Defrag(d0=6).fit(ml_random.X, ml_random.Y),
                        Defrag(d0=6).fit(other.X, other.Y))
    # the old `train` on a file without a test part: the classifier on every row
    kt = dict(n_trees=1, max_leaf_labels=5)
    assert not same_fit(KTXMLC(**kt).fit(ml_random.X, ml_random.Y),
                        KTXMLC(**kt).fit(other.X, other.Y))
    # ... while the same estimators on the training rows pass
    tr = split.train
    assert same_fit(Defrag(d0=6).fit(ml_random.X[tr], ml_random.Y[tr]),
                    Defrag(d0=6).fit(other.X[tr], other.Y[tr]))
    # and changing a *training* row does change the run's fit
    changed = MultiLabelData(X=_mix_rows(ml_random.X, _noise_like(ml_random.X,
                                                                  np.random.default_rng(5)),
                                         tr[:20], ml_random.X.shape[0]),
                             Y=ml_random.Y)
    a = run_pipeline(ml_random, split, MULTILABEL_SPECS["+ refrag"])
    b = run_pipeline(changed, make_split(changed, test_size=0.25, valid_size=0.15,
                                         random_state=3), MULTILABEL_SPECS["+ refrag"])
    assert not same_fit(a.pipeline, b.pipeline)
