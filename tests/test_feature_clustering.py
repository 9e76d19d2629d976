"""The feature-clustering baselines against scikit-learn and brute force."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import AgglomerativeClustering, MiniBatchKMeans

from featagg_core.utils.cancel import Cancelled
from featagg_core.agglomeration.defrag import feature_representation
from featagg_core.agglomeration.clustering import (
    MAX_CENTRE_BYTES,
    WARD_LIMIT,
    default_batch_size,
    kmeans_feature_labels,
    random_balanced_labels,
    ward_feature_labels,
)
from featagg_core.runs.estimate import sampling_plan


@pytest.fixture(scope="module")
def R():
    X = sp.random(300, 400, density=0.05, format="csr", random_state=1, dtype=np.float32)
    X.data[:] = np.ceil(X.data * 3)
    return feature_representation(X, representation="X")[0]


def _sklearn_mbkm(R, K, b, max_iter, init, seed):
    return MiniBatchKMeans(n_clusters=K, init=init, n_init=1, batch_size=b, max_iter=max_iter,
                           max_no_improvement=None, random_state=seed).fit(R)


@pytest.fixture(autouse=True, scope="module")
def _one_openmp_thread():
    # scikit-learn's k-means results do not depend on its thread count; one thread keeps
    # the many tiny batches fast on a busy machine
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


@pytest.mark.parametrize("init", ["k-means++", "random"])
@pytest.mark.parametrize("K,b,passes", [(10, 64, 3), (7, 1024, 5), (40, 16, 1)])
def test_kmeans_equals_minibatchkmeans_fit(R, init, K, b, passes):
    ref = _sklearn_mbkm(R, K, b, passes, init, 3)
    labels, centers = kmeans_feature_labels(R, K, random_state=3, batch_size=b,
                                            max_iter=passes, init=init, return_centers=True)
    np.testing.assert_array_equal(labels, ref.labels_)
    np.testing.assert_array_equal(centers, ref.cluster_centers_)


def test_kmeans_auto_init_follows_its_rule(R):
    # K = 10 on 400 features with 10 passes: k-means++ is cheaper than the passes
    auto = kmeans_feature_labels(R, 10, random_state=0)
    pp = kmeans_feature_labels(R, 10, random_state=0, init="k-means++")
    np.testing.assert_array_equal(auto, pp)
    # one pass over the features costs less than (2 + ln K) x init_size: random
    auto1 = kmeans_feature_labels(R, 10, random_state=0, max_iter=1)
    rnd1 = kmeans_feature_labels(R, 10, random_state=0, max_iter=1, init="random")
    np.testing.assert_array_equal(auto1, rnd1)


def test_kmeans_sampled_fit_and_nearest_centre_assignment(R):
    d, m, K = R.shape[0], 150, 8
    labels, centers = kmeans_feature_labels(R, K, random_state=5, max_features=m,
                                            return_centers=True)
    # the fit is MiniBatchKMeans on the seeded sample of the features ...
    sample = np.sort(np.random.default_rng(5).choice(d, size=m, replace=False))
    ref = _sklearn_mbkm(R[sample], K, min(1024, m), 10, "k-means++", 5)
    np.testing.assert_allclose(centers, ref.cluster_centers_, rtol=0, atol=0)
    # ... and every feature (sampled or not) goes to its nearest centre, by brute force
    dense = R.toarray().astype(np.float64)
    dist = ((dense[:, None, :] - centers[None, :, :].astype(np.float64)) ** 2).sum(axis=2)
    best = dist.min(axis=1)
    chosen = dist[np.arange(d), labels]
    np.testing.assert_allclose(chosen, best, rtol=1e-5, atol=1e-6)
    assert set(np.unique(labels)) <= set(range(K))


def test_kmeans_refuses_what_it_cannot_do(R):
    with pytest.raises(ValueError, match="more than the 20 features"):
        kmeans_feature_labels(R, 30, max_features=20)
    with pytest.raises(ValueError, match="n_clusters must be an integer"):
        kmeans_feature_labels(R, 0)
    with pytest.raises(ValueError, match="init must be"):
        kmeans_feature_labels(R, 3, init="kmeans++")
    cols = MAX_CENTRE_BYTES // (4 * 3000) + 1
    wide = sp.csr_matrix((np.ones(4000, np.float32), (np.arange(4000), np.arange(4000) % cols)),
                         shape=(4000, cols))
    with pytest.raises(ValueError, match="dense centres"):
        kmeans_feature_labels(wide, 3000)


def test_default_batch_size_bounds_one_batch():
    assert default_batch_size(256) == 1024            # scikit-learn's default
    assert default_batch_size(8192) * 8192 <= 8_000_000
    assert default_batch_size(10 ** 6) == 64


def test_ward_equals_agglomerative_clustering(R):
    for K in (5, 30):
        ref = AgglomerativeClustering(n_clusters=K, linkage="ward").fit(R.toarray()).labels_
        np.testing.assert_array_equal(ward_feature_labels(R, K), ref)


def test_ward_sampled_then_nearest_centroid(R):
    d, m, K = R.shape[0], 120, 6
    labels, cent = ward_feature_labels(R, K, max_features=m, random_state=2,
                                       return_centroids=True)
    sample = np.sort(np.random.default_rng(2).choice(d, size=m, replace=False))
    dense = R.toarray().astype(np.float64)
    ref = AgglomerativeClustering(n_clusters=K, linkage="ward").fit(dense[sample]).labels_
    np.testing.assert_array_equal(labels[sample], ref)
    # centroids are the means of the sampled members; the rest join the nearest one
    mu = np.stack([dense[sample][ref == k].mean(axis=0) for k in range(K)])
    np.testing.assert_allclose(cent.toarray(), mu, atol=1e-12)
    rest = np.setdiff1d(np.arange(d), sample)
    dist = ((dense[rest][:, None, :] - mu[None]) ** 2).sum(axis=2)
    np.testing.assert_allclose(dist[np.arange(rest.size), labels[rest]], dist.min(axis=1),
                               atol=1e-12)


def test_ward_limits(R):
    with pytest.raises(ValueError, match="Ward's limit"):
        ward_feature_labels(R, 3, max_features=WARD_LIMIT + 1)
    with pytest.raises(ValueError, match="cannot make more clusters"):
        ward_feature_labels(R, 50, max_features=40)


def test_random_balanced_is_a_seeded_balanced_partition():
    lab = random_balanced_labels(103, 10, random_state=4)
    sizes = np.bincount(lab, minlength=10)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 103
    perm = np.random.default_rng(4).permutation(103)
    np.testing.assert_array_equal(lab[perm], np.arange(103) % 10)
    assert not np.array_equal(lab, random_balanced_labels(103, 10, random_state=5))
    with pytest.raises(ValueError, match="more than the 5 features"):
        random_balanced_labels(5, 6)


@pytest.mark.parametrize("which", ["kmeans", "ward"])
def test_cancel_propagates_and_leaves_no_thread(R, which):
    calls = []

    def progress(fraction, message):
        calls.append(message)
        if len(calls) == 3:
            raise Cancelled("stop")

    before = threading.active_count()
    with pytest.raises(Cancelled):
        if which == "kmeans":
            kmeans_feature_labels(R, 10, progress=progress, batch_size=16)
        else:
            ward_feature_labels(R, 10, progress=progress)
    assert len(calls) == 3
    assert threading.active_count() == before


def test_progress_is_monotone_and_ends_at_one(R):
    seen = []
    kmeans_feature_labels(R, 10, batch_size=64, max_iter=2,
                          progress=lambda f, m: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    seen.clear()
    ward_feature_labels(R, 10, max_features=100, progress=lambda f, m: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)


def test_sampling_plan_on_bibtex_sized_data():
    from featagg_core.experiment import make_split
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    data = make_powerlaw_multilabel(400, 3000, 40, random_state=0)
    split = make_split(data)
    speed = {k: 1e8 for k in ("sparse", "defrag", "linear", "pairs", "pairs_big", "stream",
                              "onmtf", "kmeans_dense", "vocab", "matvec", "dp")}
    speed.update(py=1e6, wall_factor=1.0)
    spec = {"feature_clustering": {"kind": "kmeans", "n_clusters": 64}}
    plan = sampling_plan(data, split, spec, speed=speed, budget_s=1e9)
    assert not plan["needs_sampling"] and plan["max_features_suggested"] is None
    assert plan["seconds"] == plan["seconds_full"] > 0
    tight = sampling_plan(data, split, spec, speed=speed, budget_s=plan["seconds"] / 2)
    assert tight["needs_sampling"]
    m = tight["max_features_suggested"]
    assert 64 <= m < 3000
    # the suggested sample is estimated to fit the budget, a much larger one not
    at_m = sampling_plan(data, split, {"feature_clustering": {"kind": "kmeans",
                                                              "n_clusters": 64,
                                                              "max_features": m}},
                         speed=speed, budget_s=1e9)
    assert at_m["seconds"] <= plan["seconds"] / 2 < plan["seconds"]
    ward = sampling_plan(data, split, {"feature_clustering": {"kind": "ward",
                                                              "n_clusters": 64}},
                         speed=speed)
    assert ward["needs_sampling"] and ward["n_fit"] == 2000
    rnd = sampling_plan(data, split, {"feature_clustering": {"kind": "random_balanced",
                                                             "n_clusters": 64}}, speed=speed)
    assert not rnd["needs_sampling"]
    with pytest.raises(ValueError, match="Ward cannot make"):
        sampling_plan(data, split, {"feature_clustering": {"kind": "ward",
                                                           "n_clusters": 2500}}, speed=speed)
