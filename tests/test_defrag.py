"""Tests of featagg_core.agglomeration.defrag against independent references (dense brute force,
hand-built membership matrices, planted clusters, the original code's Bibtex groups)."""
import math
import os
from collections import deque

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from featagg_core.agglomeration.defrag import (
    Defrag,
    balanced_depth_cap,
    clustering_error,
    feature_representation,
    warmup,
)
from featagg_core._kernels.defrag import node_centres

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "bibtex")


def _random_xy(n=300, d=120, L=15, density=0.05, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float32)
    X.data = rng.integers(1, 4, X.nnz).astype(np.float32)
    Y = sp.random(n, L, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Y.data[:] = 1.0
    return X, Y


# ---------------------------------------------------------------- dense reference
def _dense_repr(X, Y, representation):
    Xd = X.toarray().astype(np.float64)
    R = Xd.T if representation == "X" else Xd.T @ Y.toarray().astype(np.float64)
    norms = np.linalg.norm(R, axis=1, keepdims=True)
    return R / np.where(norms > 0, norms, 1.0)


def _ref_split(R, members, seed, node_id, eps, max_iter):
    members = np.asarray(members)
    n = len(members)
    r0, r1 = node_centres(seed, node_id, n)
    c = [R[members[r0]].copy(), R[members[r1]].copy()]
    old, new, it = -10000.0, -1.0, 0
    side = np.zeros(n, int)
    while new - old >= eps and it < max_iter:
        it += 1
        cos0, cos1 = R[members] @ c[0], R[members] @ c[1]
        rank = np.argsort(cos1 - cos0, kind="stable")
        side = np.ones(n, int)
        side[rank[: n // 2]] = 0
        old, new = new, float(np.where(side == 0, cos0, cos1).mean())
        for s in (0, 1):
            v = R[members[side == s]].sum(axis=0)
            nv = np.linalg.norm(v)
            c[s] = v / nv if nv > 0 else v
    return members[side == 0].tolist(), members[side == 1].tolist()


def _ref_defrag(R, d0, seed, eps=1e-4, max_iter=50):
    """Level-order (BFS) build with the same node numbering; clusters numbered left to right."""
    d = R.shape[0]
    cap = balanced_depth_cap(d, d0)
    queue = deque([(0, list(range(d)), 0)])
    next_id = 1
    children, members_of = {}, {}
    while queue:
        nid, mem, depth = queue.popleft()
        members_of[nid] = mem
        if len(mem) <= d0 or depth >= cap:
            continue
        left, right = _ref_split(R, mem, seed, nid, eps, max_iter)
        children[nid] = (next_id, next_id + 1)
        queue.append((next_id, left, depth + 1))
        queue.append((next_id + 1, right, depth + 1))
        next_id += 2
    labels = np.empty(d, int)
    k = 0
    stack = [0]
    while stack:  # depth first, left first: clusters left to right
        v = stack.pop()
        if v in children:
            stack.extend(reversed(children[v]))
        else:
            labels[members_of[v]] = k
            k += 1
    return labels


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    warmup()


# ---------------------------------------------------------------- the algorithm
@pytest.mark.parametrize("representation", ["X", "XY"])
@pytest.mark.parametrize("d0", [1, 3, 8])
def test_matches_dense_reference(representation, d0):
    X, Y = _random_xy(d=90, seed=d0)
    m = Defrag(d0=d0, representation=representation, random_state=7).fit(X, Y)
    ref = _ref_defrag(_dense_repr(X, Y, representation), d0, 7)
    np.testing.assert_array_equal(m.labels_, ref)


def test_split_is_balanced_everywhere_and_leaves_small():
    X, Y = _random_xy(d=203)
    m = Defrag(d0=6, representation="XY").fit(X, Y)
    t = m.tree_
    n_leaves = 0
    for v in t.iter_nodes():
        if t.is_leaf(v):
            n_leaves += 1
            assert t.n_members[v] <= 6
            assert np.all(m.labels_[t.members(v)] == t.cluster[v])
        else:
            l, r = t.children(v)
            n = t.n_members[v]
            assert (t.n_members[l], t.n_members[r]) == (n // 2, n - n // 2)
            assert t.parent[l] == v and t.parent[r] == v
            assert t.depth[l] == t.depth[v] + 1
            np.testing.assert_array_equal(np.sort(np.r_[t.members(l), t.members(r)]),
                                          t.members(v))
    assert n_leaves == m.n_clusters_ == len(np.unique(m.labels_))
    np.testing.assert_array_equal(np.bincount(m.labels_), m.cluster_sizes_)
    def n_leaves_of(n):  # exact halving until <= d0
        return 1 if n <= 6 else n_leaves_of(n // 2) + n_leaves_of(n - n // 2)
    # 203 -> 101|102 -> 50|51 -> 25|26 -> 12|13 -> 6 (leaf) | 6|7 -> 3|4
    assert m.n_clusters_ == n_leaves_of(203) == 43
    assert set(m.cluster_sizes_) == {3, 4, 6}


def test_depth_cap_formula():
    # the original: max_depth = ceil(log2(num / cluster_maxleaf)) + 1, leaf at depth >= max_depth-1
    assert balanced_depth_cap(1836, 8) == 8
    assert balanced_depth_cap(16, 8) == 1
    assert balanced_depth_cap(17, 8) == 2
    assert balanced_depth_cap(8, 8) == 0 and balanced_depth_cap(1, 8) == 0
    for d in range(1, 300, 7):
        for d0 in (1, 2, 5, 8):
            cap = balanced_depth_cap(d, d0)
            assert math.ceil(d / 2 ** cap) <= d0  # nodes at the cap are small enough


def test_bibtex_sized_tree_gives_256_groups_of_7_or_8():
    X, _ = _random_xy(n=200, d=1836, density=0.02, seed=3)
    m = Defrag(d0=8, representation="X").fit(X)
    assert m.n_clusters_ == 256
    assert sorted(np.unique(m.cluster_sizes_).tolist()) == [7, 8]
    assert m.tree_.max_depth == 8


def test_transform_equals_x_times_membership():
    X, Y = _random_xy(d=77, seed=4)
    m = Defrag(d0=5, representation="XY").fit(X, Y)
    G = np.zeros((77, m.n_clusters_))
    for j, c in enumerate(m.labels_):  # independent 0/1 membership
        G[j, c] = 1.0
    Xd = X.toarray()
    out = m.transform(X)
    assert sp.isspmatrix_csr(out) and out.shape == (X.shape[0], m.n_clusters_)
    np.testing.assert_allclose(out.toarray(), Xd @ G, rtol=1e-6)
    avg = m.transform(X, aggregation="avg").toarray()
    cnt = (Xd != 0).astype(float) @ G
    np.testing.assert_allclose(avg, np.divide(Xd @ G, cnt, out=np.zeros_like(cnt), where=cnt > 0),
                               rtol=1e-6)
    np.testing.assert_allclose(m.membership_matrix().toarray(), G)
    np.testing.assert_allclose(Defrag(d0=5).fit_transform(X, Y).toarray(), Xd @ G, rtol=1e-6)


def test_clustering_error_matches_brute_force():
    X, Y = _random_xy(d=64, seed=5)
    m = Defrag(d0=4, representation="XY").fit(X, Y)
    R = _dense_repr(X, Y, "XY")
    err = np.mean([np.sum((R[j] - R[m.labels_ == m.labels_[j]].mean(0)) ** 2) for j in range(64)])
    assert m.clustering_error_ == pytest.approx(err, rel=1e-5)
    Rs, _ = feature_representation(X, Y, "XY")
    assert clustering_error(Rs, m.labels_) == pytest.approx(err, rel=1e-5)


def _planted(levels=5, size=8, n=800, seed=0, decay=0.5):
    """Hierarchically planted clusters: 2**levels topics on a binary tree; a feature of
    cluster c fires on a point of topic t with probability 0.6 * 0.5**(levels - common),
    where ``common`` is the depth of the topics' lowest common ancestor (same topic: 0.6,
    sibling: 0.3, ...), so the true tree is a balanced binary hierarchy."""
    rng = np.random.default_rng(seed)
    n_clusters = 2 ** levels
    d = n_clusters * size
    truth = rng.permutation(np.repeat(np.arange(n_clusters), size))
    topic = rng.integers(0, n_clusters, n)
    common = np.zeros((n_clusters, n_clusters), int)
    for a in range(n_clusters):
        for b in range(n_clusters):
            x = a ^ b
            common[a, b] = levels if x == 0 else levels - int(x).bit_length()
    prob = 0.6 * decay ** (levels - common)
    P = prob[topic][:, truth]  # n x d firing probabilities (small test input)
    X = sp.csr_matrix((rng.random(P.shape) < P).astype(np.float32))
    return X, truth


def test_recovers_planted_clusters_and_beats_random_partitions():
    """Balanced 2-means from two random members can stop in a local optimum that cuts a
    planted cluster (as the original code can), so recovery is measured over seeds: most
    leaves are exactly one planted cluster and NMI is near 1, where random balanced
    partitions get no pure leaf; the clustering error is far below theirs."""
    from sklearn.metrics import normalized_mutual_info_score as nmi
    X, truth = _planted(levels=5, n=800, decay=0.3)
    R, _ = feature_representation(X, representation="X")
    rng = np.random.default_rng(0)
    random_errs, random_nmi, random_pure = [], [], []
    for _ in range(8):
        lab = np.empty(truth.shape[0], int)
        lab[rng.permutation(truth.shape[0])] = np.arange(truth.shape[0]) % 32
        random_errs.append(clustering_error(R, lab))
        random_nmi.append(nmi(truth, lab))
        random_pure.append(sum(len(np.unique(truth[lab == c])) == 1 for c in range(32)))
    errs, nmis, pure = [], [], []
    for seed in range(8):
        m = Defrag(d0=8, representation="X", random_state=seed).fit(X)
        assert m.n_clusters_ == 32
        errs.append(m.clustering_error_)
        nmis.append(nmi(truth, m.labels_))
        pure.append(sum(len(np.unique(truth[m.labels_ == c])) == 1 for c in range(32)))
    assert max(errs) < 0.8 * min(random_errs)
    assert np.mean(nmis) > 0.9 and min(nmis) > 0.85 > max(random_nmi)
    assert np.mean(pure) > 16 and max(random_pure) == 0
    # on this data the planted partition has the lowest error of all these partitions
    assert min(errs) >= clustering_error(R, truth) - 1e-9


def test_same_seed_same_clusters_and_thread_count_independent():
    X, Y = _random_xy(d=500, density=0.03, seed=6)
    a = Defrag(d0=4, random_state=3).fit(X, Y)
    b = Defrag(d0=4, random_state=3).fit(X, Y)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    c = Defrag(d0=4, random_state=4).fit(X, Y)
    assert not np.array_equal(a.labels_, c.labels_)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = Defrag(d0=4, random_state=3).fit(X, Y)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(a.labels_, one.labels_)
    np.testing.assert_array_equal(a.tree_.order, one.tree_.order)
    np.testing.assert_array_equal(a.tree_.n_iter, one.tree_.n_iter)


# ---------------------------------------------------------------- options
def test_sampling_uses_densest_points_and_most_frequent_labels():
    X, Y = _random_xy(n=100, d=40, seed=8)
    nnz = np.diff(X.indptr)
    R, _ = feature_representation(X, Y, "X", sample_points=0.2)
    # brute force: the 20 rows with most non-zeros (ties to the larger index)
    keep = sorted(sorted(range(100), key=lambda i: (nnz[i], i), reverse=True)[:20])
    ref = _dense_repr(X[keep], None, "X")
    np.testing.assert_allclose(R.toarray(), ref, rtol=1e-5, atol=1e-7)
    lab_cnt = np.asarray(Y[keep].sum(axis=0)).ravel()
    top = sorted(sorted(range(15), key=lambda j: (lab_cnt[j], j), reverse=True)[:3])
    R2, _ = feature_representation(X, Y, "XY", sample_points=0.2, sample_labels=0.2)
    np.testing.assert_allclose(R2.toarray(), _dense_repr(X[keep], Y[keep][:, top], "XY"),
                               rtol=1e-5, atol=1e-7)
    m = Defrag(d0=4, sample_points=0.2, sample_labels=0.2).fit(X, Y)
    assert m.n_clusters_ == 16 and m.cluster_sizes_.max() <= 4


def test_pruning_drops_small_entries():
    X, Y = _random_xy(d=30, seed=9)
    R, sq = feature_representation(X, Y, "XY", prune_threshold=0.2)
    ref = _dense_repr(X, Y, "XY")
    ref[np.abs(ref) <= 0.2] = 0
    np.testing.assert_allclose(R.toarray(), ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sq, (ref ** 2).sum(1), rtol=1e-5)


# ---------------------------------------------------------------- edge cases
@pytest.mark.parametrize("d", [1, 5, 8])
def test_d_not_above_d0_gives_one_cluster(d):
    X, Y = _random_xy(d=d, density=0.5, seed=d)
    m = Defrag(d0=8).fit(X, Y)
    assert m.n_clusters_ == 1 and m.tree_.n_nodes == 1
    np.testing.assert_array_equal(m.labels_, np.zeros(d))
    np.testing.assert_allclose(m.transform(X).toarray().ravel(), X.toarray().sum(1), rtol=1e-6)


def test_d0_one_gives_singletons():
    X, Y = _random_xy(d=13, seed=10)
    m = Defrag(d0=1, representation="X").fit(X)
    assert m.n_clusters_ == 13
    assert sorted(m.labels_.tolist()) == list(range(13))
    # a permutation of the columns
    np.testing.assert_allclose(m.transform(X).toarray()[:, m.labels_], X.toarray())


def test_all_zero_and_unseen_features():
    X, Y = _random_xy(d=40, seed=11)
    X = X.tolil()
    X[:, [3, 17, 18, 30]] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    m = Defrag(d0=4, representation="XY").fit(X, Y)
    np.testing.assert_array_equal(m.zero_features_, [3, 17, 18, 30])
    assert m.cluster_sizes_.max() <= 4 and m.n_clusters_ == 16  # still balanced
    # at transform time the unseen features' values go to their assigned clusters
    Xt = sp.csr_matrix(np.eye(40, dtype=np.float32))
    out = m.transform(Xt).toarray()
    np.testing.assert_array_equal(out.argmax(1), m.labels_)
    # completely empty X: still a balanced tree, zero error
    m0 = Defrag(d0=4, representation="X").fit(sp.csr_matrix((5, 20), dtype=np.float32))
    assert m0.n_clusters_ == 8 and m0.clustering_error_ == 0.0
    assert m0.transform(sp.csr_matrix((2, 20))).nnz == 0


def test_dense_input_and_explicit_duplicates_accepted():
    X, Y = _random_xy(d=30, seed=12)
    a = Defrag(d0=4).fit(X.toarray(), Y.toarray())
    b = Defrag(d0=4).fit(X, Y)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_errors():
    X, Y = _random_xy(d=30, seed=13)
    with pytest.raises(ValueError, match="needs the label matrix Y"):
        Defrag().fit(X)
    with pytest.raises(NotFittedError):
        Defrag().transform(X)
    for bad in [dict(d0=0), dict(d0=2.5), dict(representation="Y"), dict(random_state=-1),
                dict(sample_points=0), dict(sample_labels=1.5), dict(prune_threshold=-0.1),
                dict(max_iter=0), dict(aggregation="max"), dict(eps=-1)]:
        name = next(iter(bad))
        with pytest.raises(ValueError, match=name):
            Defrag(**bad).fit(X, Y)
    with pytest.raises(ValueError, match="rows"):
        Defrag().fit(X, Y[:10])
    m = Defrag(d0=4).fit(X, Y)
    with pytest.raises(ValueError, match="31 features but this Defrag was fitted on 30"):
        m.transform(sp.random(3, 31, format="csr"))
    with pytest.raises(ValueError, match="aggregation"):
        m.transform(X, aggregation="median")
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Defrag(d0=4).fit(bad, Y)


def test_sklearn_params_clone_and_artifact_roundtrip(tmp_path):
    from featagg_core.artifacts.store import load_artifact, save_artifact
    X, Y = _random_xy(d=50, seed=14)
    est = Defrag(d0=4, representation="XY", random_state=2, aggregation="avg")
    assert clone(est).get_params() == est.get_params()
    est.fit(X, Y)
    path = tmp_path / "defrag.zip"
    save_artifact(est, str(path))
    back = load_artifact(str(path))
    np.testing.assert_array_equal(back.labels_, est.labels_)
    assert back.n_clusters_ == est.n_clusters_
    assert back.clustering_error_ == est.clustering_error_
    np.testing.assert_array_equal(back.tree_.order, est.tree_.order)
    np.testing.assert_allclose(back.transform(X).toarray(), est.transform(X).toarray())
    assert back.get_params() == est.get_params()


def test_tree_export_for_plots():
    X, Y = _random_xy(d=100, seed=15)
    m = Defrag(d0=4).fit(X, Y)
    t = m.tree_
    full = t.to_plotly()
    assert len(full["ids"]) == t.n_nodes
    # plotly "total" branch values: each parent equals the sum of its children
    val = dict(zip(full["ids"], full["values"]))
    kids = {}
    for i, p in zip(full["ids"], full["parents"]):
        if p:
            kids.setdefault(p, []).append(val[i])
    assert all(val[p] == sum(v) for p, v in kids.items())
    top = t.to_plotly(max_depth=2)
    assert len(top["ids"]) == 7 and max(top["depth"]) == 2
    sub = t.to_plotly(root=t.children(0)[1], max_depth=1)
    assert sub["parents"][0] == "" and len(sub["ids"]) == 3
    names = [f"w{j}" for j in range(100)]
    leaf = t.leaves()[0]
    exp = t.to_plotly(root=leaf, feature_names=names)
    assert exp["labels"][0].startswith("cluster 0: " + names[m.cluster_members(0)[0]])


@pytest.mark.skipif(not os.path.exists(os.path.join(SHARED, "defrag_sandbox", "group.txt")),
                    reason="../shared/data/bibtex not available")
def test_bibtex_against_original_groups():
    from featagg_core.data import load_xc
    D = load_xc(os.path.join(SHARED, "xc_repo_split", "train.txt"))
    lines = open(os.path.join(SHARED, "defrag_sandbox", "group.txt")).read().split("\n")
    theirs = np.full(D.X.shape[1], -1)
    for c, ln in enumerate(lines[1:1 + int(lines[0])]):
        t = [int(v) for v in ln.split()]
        theirs[t[1:1 + t[0]]] = c
    m = Defrag(d0=8, representation="X").fit(D.X)
    assert m.n_clusters_ == 256
    assert np.array_equal(np.sort(np.bincount(m.labels_)), np.sort(np.bincount(theirs)))
    R, _ = feature_representation(D.X, representation="X")
    # same representation, same d0: no worse than the original's clustering
    assert m.clustering_error_ <= clustering_error(R, theirs)
