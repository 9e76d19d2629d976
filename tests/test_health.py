"""Data-health checks (featagg_core.health): each alert on hand-made data with a known answer,
positive and negative; the near-duplicate search against brute-force cosines; label errors
on a separable set with injected flips."""
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from featagg_core import health
from featagg_core._kernels import health as hk
from featagg_core.data import CategoricalData, GraphData, MultiLabelData
from featagg_core.experiment import make_split
from featagg_core.health import rows as hrows
from featagg_core.health.alerts import MAX_LIST, Alert, alerts_to_json
from featagg_core.health.columns import label_alerts, label_pairs_alert
from featagg_core.health.graph import edge_homophily
from featagg_core.health.label_errors import label_error_alert, label_issue_scores
from featagg_core.health.table import numeric_label_alert


def csr(rows, d):
    """csr float32 from a list of {col: value} dicts."""
    r, c, v = [], [], []
    for i, row in enumerate(rows):
        for j, x in sorted(row.items()):
            r.append(i)
            c.append(j)
            v.append(x)
    return sp.csr_matrix((np.asarray(v, np.float32), (r, c)), shape=(len(rows), d))


def by_type(alerts):
    return {a.type: a for a in alerts}


# ------------------------------------------------------------------ duplicates / conflicts
def _dup_data():
    X = csr([{0: 1, 2: 2}, {1: 1}, {3: 1, 4: 1}, {0: 1, 2: 2}, {3: 1, 4: 1}, {1: 1},
             {0: 1, 2: 2.5}, {}], 6)
    Y = csr([{0: 1}, {1: 1}, {0: 1}, {0: 1}, {1: 1}, {1: 1}, {0: 1}, {0: 1}], 3)
    return X, Y


def test_duplicates_and_conflicts_known_answer():
    X, Y = _dup_data()
    a = by_type(health.check(MultiLabelData(X, Y), label_errors=False))
    # row 3 repeats row 0, row 5 repeats row 1 (features and labels); row 6 differs by a
    # value; row 4 has row 2's features with other labels; row 7 is empty (not a duplicate)
    assert a["duplicate_rows"].rows.tolist() == [3, 5]
    assert a["duplicate_rows"].count == 2
    assert sorted(a["conflicting_labels"].rows.tolist()) == [2, 4]
    assert a["empty_features"].rows.tolist() == [7]


def test_no_duplicates_no_alert():
    X = csr([{0: 1}, {1: 1}, {0: 1, 1: 1}, {0: 2}], 2)
    Y = csr([{0: 1}, {0: 1}, {1: 1}, {0: 1}], 2)
    types = {a.type for a in health.check(MultiLabelData(X, Y), label_errors=False)}
    assert not types & {"duplicate_rows", "conflicting_labels", "empty_features",
                        "empty_labels", "train_test_overlap"}


def test_equal_rows_survive_hash_collisions():
    """Every hash forced equal: the exact comparison alone must still split the classes."""
    rng = np.random.default_rng(0)
    X = sp.random(60, 5, density=0.3, random_state=1, format="csr", dtype=np.float32)
    X.data[:] = rng.integers(1, 3, X.nnz)
    X = hrows.canonical_csr(sp.vstack([X, X[:20]], format="csr"))
    bits = X.data.view(np.uint32)
    hashes = np.zeros(X.shape[0], np.uint64)
    order = np.arange(X.shape[0])
    rep = hk.group_equal_rows(order, hashes, X.indptr.astype(np.int64), X.indices, bits,
                              True, X.indptr.astype(np.int64), X.indices, False)
    dense = X.toarray()
    for i in range(X.shape[0]):
        first = next(j for j in range(X.shape[0]) if np.array_equal(dense[j], dense[i]))
        assert rep[i] == first
    assert np.array_equal(rep, hrows.equal_row_groups(X))


def test_truncated_flag_beyond_max_list():
    n = MAX_LIST + 3
    X = sp.csr_matrix((np.ones(n, np.float32), np.zeros(n, np.int32), np.arange(n + 1)),
                      shape=(n, 2))
    Y = X.copy()
    a = by_type(hrows.duplicate_alerts(X, Y))["duplicate_rows"]
    assert a.count == n - 1
    d = a.to_dict()
    assert d["truncated"] is True and len(d["rows"]) == MAX_LIST
    small = Alert("x", "info", 1, "m", "h", rows=np.arange(5)).to_dict()
    assert small["truncated"] is False and small["rows"] == [0, 1, 2, 3, 4]
    doc = alerts_to_json([Alert("x", "info", 1, "m", "h")])
    json.dumps(doc)
    assert set(doc["alerts"][0]) >= {"type", "severity", "count", "rows", "test_rows",
                                     "message", "hint", "examples", "truncated"}


def test_empty_rows_train_and_test():
    X = csr([{0: 1}, {}, {1: 1}], 3)
    Y = csr([{0: 1}, {0: 1}, {}], 2)
    Xt = csr([{}, {2: 1}], 3)
    Yt = csr([{1: 1}, {}], 2)
    a = by_type(health.check(MultiLabelData(X, Y, X_test=Xt, Y_test=Yt), label_errors=False))
    assert a["empty_features"].rows.tolist() == [1]
    assert a["empty_features"].test_rows.tolist() == [0]
    assert a["empty_labels"].rows.tolist() == [2]
    assert a["empty_labels"].test_rows.tolist() == [1]


# ------------------------------------------------------------------ train/test overlap
def _random_rows(rng, n, d, nnz=20):
    rows = []
    for _ in range(n):
        cols = rng.choice(d, nnz, replace=False)
        rows.append(dict(zip(cols.tolist(), rng.uniform(0.5, 2.0, nnz).tolist())))
    return rows


def _one_feature_added(row, d, cos):
    """``row`` plus one new feature so that cosine(row, new) == cos exactly."""
    v = np.array(list(row.values()))
    norm = np.sqrt(np.sum(v ** 2))
    w = norm * np.sqrt(1.0 / cos ** 2 - 1.0)
    new = dict(row)
    free = next(j for j in range(d) if j not in row)
    new[free] = w
    return new


def test_overlap_finds_097_not_090():
    rng = np.random.default_rng(3)
    d = 500
    train = _random_rows(rng, 300, d)
    test = _random_rows(rng, 50, d)
    test[10] = _one_feature_added(train[7], d, 0.97)
    test[20] = _one_feature_added(train[8], d, 0.90)
    test[30] = dict(train[9])                              # an exact copy
    data = MultiLabelData(csr(train, d), csr([{0: 1}] * 300, 2), X_test=csr(test, d),
                          Y_test=csr([{1: 1}] * 50, 2))
    a = by_type(health.check(data, label_errors=False))["train_test_overlap"]
    assert a.severity == "error"
    assert a.test_rows.tolist() == [10, 30]
    assert a.rows.tolist() == [7, 9]
    assert a.extra["exact_test_rows"] == 1


def test_overlap_equals_brute_force_with_margin():
    rng = np.random.default_rng(11)
    d = 2000
    train = _random_rows(rng, 800, d, nnz=30)
    test = _random_rows(rng, 400, d, nnz=30)
    planted = rng.choice(400, 60, replace=False)
    for t in planted:
        src = train[int(rng.integers(800))]
        cos = float(rng.uniform(0.965, 1.0))
        test[t] = _one_feature_added(src, d, cos) if cos < 0.999 else dict(src)
    # near-misses: clearly below the threshold
    for t in rng.choice(np.setdiff1d(np.arange(400), planted), 30, replace=False):
        test[t] = _one_feature_added(train[int(rng.integers(800))], d, rng.uniform(0.8, 0.93))
    X, Xt = hrows.canonical_csr(csr(train, d)), hrows.canonical_csr(csr(test, d))
    norm = lambda M: sp.diags(1 / np.sqrt(np.asarray(M.multiply(M).sum(1)).ravel())) @ M
    C = (norm(Xt) @ norm(X).T).toarray()
    assert not np.any((C > 0.935) & (C < 0.96))            # the margin the test relies on
    brute = {(int(i), int(j)) for i, j in zip(*np.nonzero(C >= 0.95))}
    t, r, c, stats = hrows.near_duplicate_pairs(X, Xt, 0.95)
    assert set(zip(t.tolist(), r.tolist())) == brute
    np.testing.assert_allclose(c, C[t, r], rtol=1e-5)
    # sub-quadratic: far fewer cosines than the 320,000 pairs
    assert stats["candidates"] < 0.2 * 800 * 400


def test_overlap_giant_bucket_is_bounded_and_still_finds_copies():
    """3,000 training rows that are one row with tiny noise fill one bucket in every band:
    the window bounds the work and the exact copies are still found."""
    rng = np.random.default_rng(5)
    d = 300
    base = {j: 1.0 for j in range(20)}
    train = []
    for _ in range(3000):
        r = dict(base)
        r[int(rng.integers(20, d))] = 0.01
        train.append(r)
    test = _random_rows(rng, 40, d)
    test[3] = dict(train[1234])
    X, Xt = hrows.canonical_csr(csr(train, d)), hrows.canonical_csr(csr(test, d))
    t, r, c, stats = hrows.near_duplicate_pairs(X, Xt, 0.95)
    assert 3 in set(t.tolist())
    assert 1234 in set(r[t == 3].tolist())
    per_band = 40 * max(hrows.MAX_GROUP, 2 * hrows.WINDOW + 1)
    assert stats["candidates"] <= 20 * per_band


def test_overlap_with_random_split_reports_dataset_rows():
    rng = np.random.default_rng(1)
    d = 400
    rows = _random_rows(rng, 100, d)
    data0 = MultiLabelData(csr(rows, d), csr([{0: 1}] * 100, 2))
    split = make_split(data0, test_size=0.3, random_state=0)
    t0, tr0 = int(split.test[0]), int(split.train[0])
    rows[t0] = dict(rows[tr0])
    data = MultiLabelData(csr(rows, d), csr([{0: 1}] * 100, 2))
    a = by_type(health.check(data, split, label_errors=False))
    assert a["train_test_overlap"].test_rows.tolist() == [t0]
    assert a["train_test_overlap"].rows.tolist() == [tr0]
    # without a split there is no test part: no overlap alert, and the copy is a duplicate
    b = by_type(health.check(data, label_errors=False))
    assert "train_test_overlap" not in b
    assert b["duplicate_rows"].rows.tolist() == [max(t0, tr0)]


# ------------------------------------------------------------------ columns
def test_label_only_in_test_unused_and_drift():
    n = 400
    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((n, 4)) < 0.3).astype(np.float32))
    Y = sp.hstack([Y, sp.csr_matrix((n, 2), dtype=np.float32)], format="csr")
    Yt = np.zeros((200, 6), np.float32)
    Yt[:, :4] = rng.random((200, 4)) < 0.3
    Yt[:, 0] = rng.random(200) < 0.9                  # label 0: 30 % -> 90 %: drift
    Yt[[5, 17], 4] = 1                                 # label 4 only in test
    Yt = sp.csr_matrix(Yt)
    a = by_type(label_alerts(Y, Yt, label_names=list("abcdef")))
    assert a["label_only_in_test"].examples == ["e"]
    assert a["label_only_in_test"].test_rows.tolist() == [5, 17]
    assert a["unused_labels"].examples == ["f"]
    assert a["label_drift"].extra["labels"].tolist() == [0]
    # same distribution: no drift, no only-in-test
    b = by_type(label_alerts(Y, Y, label_names=list("abcdef")))
    assert "label_drift" not in b and "label_only_in_test" not in b


def test_near_duplicate_labels_against_brute_force():
    rng = np.random.default_rng(2)
    Yd = (rng.random((300, 8)) < 0.2).astype(np.float32)
    Yd[:, 5] = Yd[:, 1]
    Yd[:3, 5] = 1 - Yd[:3, 5]                        # nearly equal to label 1
    Yd[:, 7] = Yd[:, 2]
    a = label_pairs_alert(sp.csr_matrix(Yd))
    got = {(i, j) for i, j, _ in a.extra["pairs"]}
    B = Yd > 0
    want = set()
    for i in range(8):
        for j in range(i + 1, 8):
            inter = np.sum(B[:, i] & B[:, j])
            if inter >= 3 and inter / np.sum(B[:, i] | B[:, j]) >= 0.9:
                want.add((i, j))
    assert got == want and (2, 7) in got and (1, 5) in got
    assert label_pairs_alert(sp.csr_matrix((rng.random((300, 8)) < 0.2).astype(np.float32))) is None


def test_unused_and_constant_features():
    X = csr([{0: 1, 1: 1}, {0: 2}, {0: 1, 3: 1}], 5)
    Y = csr([{0: 1}, {1: 1}, {0: 1}], 2)
    a = by_type(health.check(MultiLabelData(X, Y, feature_names=list("vwxyz")),
                             label_errors=False))
    assert a["unused_features"].examples == ["x", "z"]
    assert a["constant_features"].examples == ["v"]


# ------------------------------------------------------------------ label errors
def test_label_issue_scores_hand_computed():
    Y = csr([{0: 1}, {0: 1}, {1: 1}, {0: 1}], 3)
    S = np.array([[0.9, 0.1, 0.0], [0.8, 0.0, 0.1], [0.1, 0.7, 0.0], [0.05, 0.9, 0.0]])
    score, flagged, gw, mb = label_issue_scores(Y, S)
    # label 0: mean score of rows without it (row 2) = 0.1; row 3 scores 0.05 <= 0.1
    assert flagged.tolist() == [False, False, False, True]
    assert gw.tolist() == [0, 0, 1, 0]
    # row 3's best missing label is 1 (0.9 >= label 1's threshold 0.7)
    assert mb[3] == 1 and mb[0] == -1
    np.testing.assert_allclose(score[3], np.log(0.9 + 1e-6) - np.log(0.05 + 1e-6))
    assert int(np.argmax(score)) == 3


def test_label_errors_find_injected_flips():
    rng = np.random.default_rng(0)
    n, L, per = 600, 6, 15
    labels = rng.integers(0, L, n)
    rows, Y = [], []
    for i in range(n):
        cols = rng.choice(per, 6, replace=False) + labels[i] * per
        rows.append({int(c): 1.0 for c in cols})
        Y.append({int(labels[i]): 1})
    inj = rng.choice(n, 30, replace=False)
    for i in inj:
        wrong = (labels[i] + 1 + rng.integers(L - 1)) % L
        Y[i] = {int(wrong): 1}
    X, Yc = csr(rows, L * per), csr(Y, L)
    a = label_error_alert(X, Yc, n_folds=5, random_state=0)
    top = set(a.rows[:30].tolist())
    assert len(top & set(inj.tolist())) >= 27          # >= 90 % of the first 30
    assert len(set(inj.tolist()) & set(a.rows.tolist())) >= 27   # flag recall >= 0.9
    assert a.count <= 45
    # the same set without flips flags (almost) nothing
    clean = csr([{int(labels[i]): 1} for i in range(n)], L)
    b = label_error_alert(X, clean, n_folds=5, random_state=0)
    assert b is None or b.count <= 5


# ------------------------------------------------------------------ graph
def test_graph_checks_known_answer():
    # nodes 0-1-2 triangle, 3-4 edge, node 5 isolated, 0 self-loop, 2->3 one way only
    A = sp.lil_matrix((6, 6), dtype=np.float32)
    for i, j in [(0, 1), (1, 2), (0, 2), (3, 4)]:
        A[i, j] = A[j, i] = 1
    A[0, 0] = 1
    A[2, 3] = 1
    X = csr([{0: 1, 1: 1}, {0: 1}, {0: 1, 2: 1}, {0: 1}, {}, {0: 1}], 4)
    y = np.array([0, 0, 1, 1, 1, -1])
    a = by_type(health.check(GraphData(A.tocsr(), X, y)))
    assert a["self_loops"].rows.tolist() == [0]
    assert a["asymmetric_edges"].count == 1
    assert a["isolated_nodes"].rows.tolist() == [5]
    assert a["components"].count == 2               # {0,1,2,3,4} via 2->3, and {5}
    assert a["empty_features"].rows.tolist() == [4]
    # feature 3 is in no node; feature 0 is absent on node 4, so not constant
    assert a["constant_features"].extra["features"].tolist() == [3]
    assert a["unlabelled_nodes"].rows.tolist() == [5]
    h, chance, m = edge_homophily(A.tocsr(), y)
    # labelled edges (upper triangle, loops excluded): 01 same, 02 diff, 12 diff, 23 same,
    # 34 same -> 3 / 5; ends: class 0 x4, class 1 x6 -> chance 0.16 + 0.36
    assert m == 5 and h == pytest.approx(0.6) and chance == pytest.approx(0.52)


def test_clean_graph_has_no_structural_alerts():
    A = sp.csr_matrix(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], np.float32))
    X = csr([{0: 1}, {0: 2, 1: 1}, {1: 1}], 2)
    types = {a.type for a in health.check(GraphData(A, X, np.array([0, 0, 0])))}
    assert not types & {"self_loops", "asymmetric_edges", "isolated_nodes", "components",
                        "empty_features", "constant_features"}


# ------------------------------------------------------------------ table
def test_table_checks_known_answer():
    n = 200
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "id": [f"u{i}" for i in range(n)],
        "colour": rng.choice(["red", "blue", "green"], n),
        "const": ["x"] * n,
        "city": ["<NA>" if i % 20 == 0 else "paris" if i % 2 else "rome" for i in range(n)],
    })
    df.loc[150, "colour"] = "violet"                  # seen only in a test row
    labels = np.zeros(n, np.int8)
    labels[:8] = 1                                    # 4 % positive
    data = CategoricalData(df, labels, "clicked")
    split = make_split(data, test_size=0.5, random_state=0)
    test = set(split.test.tolist())
    if 150 not in test:                               # put row 150 in the test part
        pytest.skip("row 150 landed in training with this seed")
    a = by_type(health.check(data, split))
    assert a["id_columns"].extra["columns"] == ["id"]
    assert "colour" in a["values_only_in_test"].extra["columns"]
    assert 150 in a["values_only_in_test"].test_rows.tolist()
    assert a["missing_values"].rows.tolist() == list(range(0, n, 20))
    assert a["near_constant_columns"].extra["columns"] == ["const"]
    assert a["label_imbalance"].count == 8
    # a balanced table without these problems
    ok = CategoricalData(df[["colour"]].iloc[:100].replace("violet", "red"),
                         np.arange(100, dtype=np.int8) % 2, "y")
    assert not {a.type for a in health.check(ok)} & {"id_columns", "missing_values",
                                                      "near_constant_columns",
                                                      "label_imbalance"}


def test_numeric_label_offers_the_median():
    a = numeric_label_alert(["1", "2", "3", "4", "5", "4", "4"], "rating")
    assert a.extra["thresholds"][0] == 4.0
    assert "rating' >= 4" in a.hint
    assert numeric_label_alert(["yes", "no"], "y") is None
    assert numeric_label_alert(["0", "1", "1"], "y") is None


def test_alerts_sorted_by_severity():
    X, Y = _dup_data()
    Xt = csr([{0: 1, 2: 2}], 6)
    alerts = health.check(MultiLabelData(X, Y, X_test=Xt, Y_test=csr([{2: 1}], 3)),
                          label_errors=False)
    sev = [a.severity for a in alerts]
    assert sev == sorted(sev, key=("error", "warning", "info").index)
    assert alerts[0].type == "train_test_overlap"
    assert by_type(alerts)["label_only_in_test"].test_rows.tolist() == [0]


# ------------------------------------------------------------------ graph: what the file held
def _edge_file(lines, **kw):
    import io
    from featagg_core.data import load_graph
    f = io.BytesIO("".join(f"{u} {v}\n" for u, v in lines).encode())
    f.name = "edges.txt"
    return load_graph(f, **kw)


def test_graph_file_edge_alerts_known_counts():
    # 2 self-loops, 3 repeated listings, 4 one-way edges next to 2 edges given both ways
    g = _edge_file([("a", "b"), ("b", "a"), ("c", "d"), ("d", "c"), ("a", "a"), ("e", "e"),
                    ("a", "b"), ("a", "b"), ("c", "d"), ("a", "c"), ("b", "d"), ("e", "f"),
                    ("f", "g")])
    a = by_type(health.check(g))
    assert a["self_loops"].count == 2 and a["self_loops"].rows is None
    assert "drops them" in a["self_loops"].message
    assert a["duplicate_edges"].count == 3 and a["duplicate_edges"].severity == "warning"
    assert a["duplicate_edges"].examples == ["a -> b", "c -> d"]
    assert a["one_way_edges"].count == 4 and a["one_way_edges"].severity == "warning"
    assert "4 edges appear in one direction only, while 2 appear both ways" in \
        a["one_way_edges"].message
    assert "asymmetric_edges" not in a          # the matrix itself is symmetric
    # kept loops: the alert names the nodes on the diagonal
    k = by_type(health.check(_edge_file([("0", "0"), ("0", "1"), ("1", "0"), ("2", "2"),
                                         ("1", "2"), ("2", "1")], self_loops=True)))
    assert k["self_loops"].rows.tolist() == [0, 2] and "keeps them" in k["self_loops"].message


def test_graph_file_edge_alerts_clean_and_one_direction_files():
    clean = by_type(health.check(_edge_file([("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")])))
    assert not set(clean) & {"self_loops", "duplicate_edges", "one_way_edges",
                             "asymmetric_edges"}
    # every edge once, in one direction: the usual convention, a note and not a warning
    once = by_type(health.check(_edge_file([("a", "b"), ("b", "c"), ("c", "d")])))
    assert once["one_way_edges"].count == 3 and once["one_way_edges"].severity == "info"
    assert not set(once) & {"self_loops", "duplicate_edges"}
    # one repeat in 25 listed edges is a note (below DUPLICATE_SHARE)
    ring = [(str(i), str(i + 1)) for i in range(24)] + [("0", "1")]
    r = by_type(health.check(_edge_file(ring)))
    assert r["duplicate_edges"].count == 1 and r["duplicate_edges"].severity == "info"
    # no file counts (a graph built in Python): the matrix checks as before
    g = _edge_file([("a", "b"), ("b", "a"), ("a", "a")])
    g.file_edges = None
    A = g.A.tolil()
    A[0, 0] = 1
    g.A = A.tocsr()
    assert by_type(health.check(g))["self_loops"].rows.tolist() == [0]
