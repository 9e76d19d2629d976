"""The Dask-distributed thresholding compression: a LocalCluster run equals the
single-process run of the same algorithm, which equals a brute-force decreasing-threshold
greedy started from the forced split points, and stays within (1 - eps) of the
single-machine thresholding result."""
import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from featagg_core.distributed import dask_client, distributed_threshold_compress
from featagg_core.vocab.compressor import VocabularyCompressor
from featagg_core.vocab.counts import sort_order

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _instance(rng, n, max_count=40):
    cnt = rng.integers(1, max_count, n)
    c1 = rng.binomial(cnt, rng.beta(0.5, 0.5, n))
    return np.arange(n), (cnt - c1).astype(np.int64), c1.astype(np.int64)


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = Client(lc)
    yield lc, client
    client.close()
    lc.close()


@pytest.mark.parametrize("budget", [10, 120, 900])
def test_local_cluster_equals_serial_and_close_to_single_machine(cluster, budget):
    _, client = cluster
    V, c0, c1 = _instance(np.random.default_rng(budget), 12000)
    eps = 0.1
    dist = distributed_threshold_compress(counts=(V, c0, c1), budget=budget, epsilon=eps,
                                          client=client)
    serial = distributed_threshold_compress(counts=(V, c0, c1), budget=budget, epsilon=eps,
                                            client="serial")
    single = VocabularyCompressor(budget, method="threshold", epsilon=eps, refine=False).fit_counts(
        V, c0, c1)
    assert np.array_equal(dist.split_points_, serial.split_points_)
    assert dist.mutual_information_ == serial.mutual_information_
    assert dist.n_buckets_ <= budget  # fewer once every chunk is saturated
    assert dist.distributed_info_["n_parts"] > 1
    assert dist.mutual_information_ >= (1 - eps) * single.mutual_information_


def test_scheduler_address_and_default_local_cluster(cluster):
    lc, _ = cluster
    V, c0, c1 = _instance(np.random.default_rng(1), 3000)
    a = distributed_threshold_compress(counts=(V, c0, c1), budget=50,
                                       scheduler_address=lc.scheduler_address)
    b = distributed_threshold_compress(counts=(V, c0, c1), budget=50, n_workers=1)
    s = distributed_threshold_compress(counts=(V, c0, c1), budget=50, client="serial")
    assert np.array_equal(a.split_points_, s.split_points_)
    assert np.array_equal(b.split_points_, s.split_points_)


def _F(c0s, c1s, S):
    groups = np.searchsorted(np.sort(np.asarray(list(S), int)), np.arange(len(c0s)), side="right")
    table = np.zeros((groups.max() + 1, 2))
    np.add.at(table[:, 0], groups, c0s)
    np.add.at(table[:, 1], groups, c1s)
    return mutual_info_score(None, None, contingency=table)


def test_serial_run_equals_brute_force_threshold_greedy_from_forced_points():
    """Independent re-implementation: Badanidiyuru-Vondrak on the whole sorted column,
    starting from the forced points, one left-to-right pass per threshold, F from sklearn."""
    rng = np.random.default_rng(2)
    V, c0, c1 = _instance(rng, 120)
    budget, eps = 13, 0.25
    res = distributed_threshold_compress(counts=(V, c0, c1), budget=budget, epsilon=eps,
                                         client="serial", n_parts=3)
    o = sort_order(c0, c1)
    a, b = c0[o], c1[o]
    n, k = 120, budget - 1
    p = int(np.ceil(eps * k))
    forced = sorted(set(np.round(np.arange(1, p + 1) * n / (p + 1)).astype(int).tolist()))
    S = list(forced)
    base = _F(a, b, S)
    d = max(_F(a, b, S + [t]) - base for t in range(1, n) if t not in S)
    tau, stop = d, eps * d / (k - p)
    while tau >= stop and len(S) < k:
        for t in range(1, n):
            if t in S:
                continue
            cur = _F(a, b, S)
            if _F(a, b, S + [t]) - cur >= tau:
                S.append(t)
                if len(S) == k:
                    break
        tau /= 1 + eps
    assert len(S) == k  # no fill pass needed on this instance
    assert sorted(S) == res.split_points_.tolist()
    assert res.mutual_information_ == pytest.approx(_F(a, b, S), abs=1e-12)


def test_values_input_and_validation():
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 300, 5000)
    y = (rng.random(5000) < 0.3).astype(int)
    r = distributed_threshold_compress(vals, y, budget=20, client="serial")
    assert r.mutual_information_ == pytest.approx(mutual_info_score(y, r.transform(vals)))
    with pytest.raises(ValueError, match="budget"):
        distributed_threshold_compress(vals, y, budget=0, client="serial")
    with pytest.raises(ValueError, match="forced_fraction"):
        distributed_threshold_compress(vals, y, budget=5, forced_fraction=1.5, client="serial")
    with pytest.raises(ValueError, match="values/labels"):
        distributed_threshold_compress(vals, budget=5, client="serial")
    with dask_client("serial") as c:
        assert c == "serial"
