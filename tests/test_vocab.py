"""Tests of featagg_core.vocab.compressor against independent computations: MI recomputed from
contingency tables with scikit-learn, enumeration of all subsets / all set partitions on
tiny instances, a brute-force greedy, and the KL fixed point of Dhillon et al."""
import io
import itertools
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import mutual_info_score

from featagg_core._kernels import vocab as K
from featagg_core.vocab.compressor import (
    METHODS,
    VocabularyCompressor,
    compress_columns,
    warmup,
)
from featagg_core.vocab.counts import _prefix, sort_order


def _mi_buckets(c0, c1, groups):
    """I(Z;C) from scratch: contingency table of (group, label) -> sklearn."""
    groups = np.asarray(groups)
    k = groups.max() + 1
    table = np.zeros((k, 2))
    np.add.at(table[:, 0], groups, c0)
    np.add.at(table[:, 1], groups, c1)
    return mutual_info_score(None, None, contingency=table)


def _F(c0s, c1s, S):
    """F(S) from scratch for split set S in the *given* order of values (c0s, c1s)."""
    n = len(c0s)
    groups = np.searchsorted(np.sort(np.asarray(list(S), int)), np.arange(n), side="right")
    return _mi_buckets(c0s, c1s, groups)


def _instance(rng, n, max_count=30):
    cnt = rng.integers(1, max_count, n)
    p = rng.beta(0.6, 0.6, n)
    c1 = rng.binomial(cnt, p)
    return (cnt - c1).astype(np.int64), c1.astype(np.int64)


def _rows(c0, c1):
    """Expand counts to (values, labels) rows."""
    vals = np.repeat(np.arange(len(c0)), c0 + c1)
    lab = np.concatenate([np.r_[np.zeros(a, np.int8), np.ones(b, np.int8)] for a, b in zip(c0, c1)])
    return vals, lab


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    warmup()


# --------------------------------------------------------------------- the objective
def _submodularity_violations(c0s, c1s):
    n = len(c0s)
    ground = range(1, n)
    F = {}
    for r in range(n):
        for A in itertools.combinations(ground, r):
            F[A] = _F(c0s, c1s, A)
    bad_mono, bad_sub = 0, 0
    for A in F:
        sA = set(A)
        for e in ground:
            if e in sA:
                continue
            gA = F[tuple(sorted(sA | {e}))] - F[A]
            if gA < -1e-12:
                bad_mono += 1
            for f in ground:  # B = A + f
                if f in sA or f == e:
                    continue
                B = tuple(sorted(sA | {f}))
                gB = F[tuple(sorted(sA | {e, f}))] - F[B]
                if gB > gA + 1e-12:
                    bad_sub += 1
    return bad_mono, bad_sub


def test_objective_monotone_submodular_by_enumeration():
    rng = np.random.default_rng(1)
    for _ in range(6):
        c0, c1 = _instance(rng, 7)
        o = sort_order(c0, c1)
        bad_mono, bad_sub = _submodularity_violations(c0[o], c1[o])
        assert bad_mono == 0 and bad_sub == 0


def test_submodularity_check_can_fail_without_sorting():
    """The same enumeration finds violations when values are *not* sorted by P(C=0|x):
    the re-parametrisation over the sorted order is what makes F submodular."""
    rng = np.random.default_rng(2)
    found = 0
    for _ in range(10):
        c0, c1 = _instance(rng, 6)
        found += _submodularity_violations(c0, c1)[1]
    assert found > 0


def test_objective_kernel_matches_sklearn():
    rng = np.random.default_rng(3)
    c0, c1 = _instance(rng, 200)
    o = sort_order(c0, c1)
    P0, P1 = _prefix(c0, c1, o)
    N = c0.sum() + c1.sum()
    for k in (0, 1, 5, 50, 199):
        S = rng.choice(np.arange(1, 200), size=k, replace=False)
        assert K.objective(P0, P1, S) / N == pytest.approx(_F(c0[o], c1[o], S), abs=1e-12)


def test_log_time_oracle_equals_recomputation_from_scratch():
    rng = np.random.default_rng(4)
    n = 3000
    c0, c1 = _instance(rng, n)
    o = sort_order(c0, c1)
    P0, P1 = _prefix(c0, c1, o)
    N = float(c0.sum() + c1.sum())
    for k in (0, 1, 7, 130, 2000):
        S = rng.choice(np.arange(1, n), size=k, replace=False).astype(np.int64)
        cands = rng.choice(np.arange(1, n), size=60, replace=False).astype(np.int64)
        fast = K.neighbour_gains(P0, P1, S, cands) / N
        slow = K.gains_from_scratch(P0, P1, S, cands) / N
        # fully independent for a few candidates: sklearn on the contingency table
        base = _F(c0[o], c1[o], S)
        ind = [_F(c0[o], c1[o], np.r_[S, c]) - base for c in cands[:8]]
        in_S = np.isin(cands, S)
        assert np.allclose(fast, slow, atol=1e-12)
        assert np.allclose(fast[:8], ind, atol=1e-10)
        assert np.all(fast[in_S] == 0.0)


def test_bit_tree_predecessor_successor():
    from numba import njit

    @njit
    def query(M, members, qs):
        w, o, L = K._bt_new(M)
        for t in members:
            K._bt_set(w, o, L, t)
        out = np.empty((len(qs), 2), np.int64)
        for i in range(len(qs)):
            out[i, 0] = K._bt_pred(w, o, L, qs[i])
            out[i, 1] = K._bt_succ(w, o, L, qs[i])
        return out

    rng = np.random.default_rng(5)
    for M in (1, 63, 64, 65, 4095, 4096, 4097, 300_001):
        for dens in (1e-4, 0.02, 0.6):
            mem = np.unique(rng.integers(0, M + 1, max(1, int(dens * M))))
            qs = rng.integers(0, M + 1, 1500)
            out = query(M, mem, qs)
            i = np.searchsorted(mem, qs)
            pred = np.where(i > 0, mem[np.maximum(i - 1, 0)], -1)
            j = np.searchsorted(mem, qs, side="right")
            succ = np.where(j < len(mem), mem[np.minimum(j, len(mem) - 1)], -1)
            assert np.array_equal(out[:, 0], pred) and np.array_equal(out[:, 1], succ)


# --------------------------------------------------------------------- exact optimum
def _set_partitions(items, k):
    """All partitions of ``items`` into at most k blocks (restricted growth strings)."""
    n = len(items)

    def rec(i, labels, used):
        if i == n:
            yield labels.copy()
            return
        for b in range(min(used + 1, k)):
            labels[i] = b
            yield from rec(i + 1, labels, max(used, b + 1))

    yield from rec(0, np.zeros(n, int), 0)


def test_dp_is_optimal_over_all_partitions_brute_force():
    rng = np.random.default_rng(6)
    for trial in range(8):
        n = int(rng.integers(3, 8))
        m = int(rng.integers(1, 5))
        c0, c1 = _instance(rng, n)
        best = max(_mi_buckets(c0, c1, g) for g in _set_partitions(range(n), m))
        vc = VocabularyCompressor(m, method="dp").fit_counts(np.arange(n), c0, c1)
        assert vc.mutual_information_ == pytest.approx(best, abs=1e-12)
        assert vc.n_buckets_ == min(m, vc.n_atoms_)
        # and over contiguous split sets in the sorted order
        o = sort_order(c0, c1)
        cont = max(_F(c0[o], c1[o], S) for r in range(min(m, n))
                   for S in itertools.combinations(range(1, n), r))
        assert cont == pytest.approx(best, abs=1e-12)


def test_dp_matches_enumeration_on_larger_contiguous_instances():
    rng = np.random.default_rng(7)
    c0, c1 = _instance(rng, 16)
    o = sort_order(c0, c1)
    for m in (2, 3, 4, 5):
        best = max(_F(c0[o], c1[o], S) for S in itertools.combinations(range(1, 16), m - 1))
        vc = VocabularyCompressor(m, method="dp").fit_counts(np.arange(16), c0, c1)
        assert vc.mutual_information_ == pytest.approx(best, abs=1e-12)


def test_tie_merging_is_exact_and_shrinks_the_problem():
    """Many values share P(C=0|x): the optimum over atom boundaries equals the optimum over
    all set partitions (brute force) and the DP over every position (merge_ties=False)."""
    rng = np.random.default_rng(20)
    for trial in range(6):
        n = 7
        c1 = rng.integers(0, 3, n)
        c0 = rng.integers(0, 3, n)
        c0[c0 + c1 == 0] = 1
        m = int(rng.integers(2, 5))
        best = max(_mi_buckets(c0, c1, g) for g in _set_partitions(range(n), m))
        merged = VocabularyCompressor(m, method="dp").fit_counts(np.arange(n), c0, c1)
        full = VocabularyCompressor(m, method="dp", merge_ties=False).fit_counts(np.arange(n), c0, c1)
        assert merged.mutual_information_ == pytest.approx(best, abs=1e-12)
        assert full.mutual_information_ == pytest.approx(best, abs=1e-12)
        assert full.n_atoms_ == n
        ratios = c0 / (c0 + c1)
        assert merged.n_atoms_ == len(np.unique(ratios))


def test_min_count_pools_rare_values():
    rng = np.random.default_rng(21)
    c0, c1 = _instance(rng, 200, 12)
    vc = VocabularyCompressor(6, min_count=5, merge_ties=False).fit_counts(np.arange(200), c0, c1)
    rare = (c0 + c1) < 5
    assert rare.any()
    assert len(set(vc.bucket_of_[rare].tolist())) == 1  # the pool is never split
    assert vc.n_atoms_ == (~rare).sum() + 1
    assert vc.transform([10**6])[0] == vc.bucket_of_[rare][0]  # unseen -> the pool's bucket
    # the pool sorts by its pooled ratio
    pooled = c0[rare].sum() / (c0 + c1)[rare].sum()
    assert np.allclose(vc.p0_sorted_[np.isin(vc.order_, np.flatnonzero(rare))], pooled)


# --------------------------------------------------------------------- greedy quality
def test_greedy_gains_are_true_marginal_gains():
    rng = np.random.default_rng(8)
    c0, c1 = _instance(rng, 400)
    o = sort_order(c0, c1)
    for method in ("submodular", "threshold"):
        vc = VocabularyCompressor(20, method=method, refine=False).fit_counts(np.arange(400), c0, c1)
        ch = vc.chosen_
        assert len(ch) == 19 and len(set(ch.tolist())) == 19
        for i in range(len(ch)):
            g = _F(c0[o], c1[o], ch[: i + 1]) - _F(c0[o], c1[o], ch[:i])
            assert vc.gains_[i] == pytest.approx(g, abs=1e-12)
        assert vc.mutual_information_ == pytest.approx(_F(c0[o], c1[o], ch), abs=1e-12)


def test_threshold_levels_respect_thresholds():
    rng = np.random.default_rng(9)
    c0, c1 = _instance(rng, 500)
    vc = VocabularyCompressor(30, method="threshold", epsilon=0.1, refine=False).fit_counts(
        np.arange(500), c0, c1)
    N = c0.sum() + c1.sum()
    o = sort_order(c0, c1)
    P0, P1 = _prefix(c0, c1, o)
    d = K.max_singleton_gain(P0, P1, 0, 500) / N
    lv = vc.levels_
    assert np.all(np.diff(lv) >= 0)
    n_levels, tau = 0, d
    while tau >= 0.1 * d / 29:
        n_levels, tau = n_levels + 1, tau / 1.1
    assert lv.max() >= n_levels  # this instance runs past the paper's last threshold
    for g, l in zip(vc.gains_, lv):
        assert g >= d / 1.1 ** l * (1 - 1e-12)
        assert l == 0 or g < d / 1.1 ** (l - 1) * (1 + 1e-12)  # not taken a level earlier


def _brute_greedy(c0s, c1s, k):
    S = []
    for _ in range(k):
        base = _F(c0s, c1s, S)
        gains = [(_F(c0s, c1s, S + [t]) - base, -t) for t in range(1, len(c0s)) if t not in S]
        S.append(-max(gains)[1])
    return S


def test_stochastic_greedy_with_full_sample_is_the_plain_greedy():
    rng = np.random.default_rng(10)
    c0, c1 = _instance(rng, 60)
    o = sort_order(c0, c1)
    vc = VocabularyCompressor(8, method="submodular", epsilon=1e-30, refine=False).fit_counts(
        np.arange(60), c0, c1)
    assert vc.chosen_.tolist() == _brute_greedy(c0[o], c1[o], 7)


def test_greedy_vs_dp_optimum_on_random_instances():
    rng = np.random.default_rng(11)
    ratios = {"submodular": [], "threshold": []}
    for trial in range(30):
        n = int(rng.integers(20, 300))
        m = int(rng.integers(2, 20))
        c0, c1 = _instance(rng, n, 50)
        opt = VocabularyCompressor(m, method="dp").fit_counts(np.arange(n), c0, c1)
        for method in ratios:
            for refine in (False, True):
                vc = VocabularyCompressor(m, method=method, refine=refine, random_state=trial)
                r = vc.fit_counts(np.arange(n), c0, c1).mutual_information_ / opt.mutual_information_
                assert r <= 1 + 1e-9
                assert r >= 1 - 1 / np.e - vc._eps()  # the guarantee, with or without refine
                if refine:
                    ratios[method].append(r)
    assert np.mean(ratios["submodular"]) >= 0.999  # the quality goal
    assert np.mean(ratios["threshold"]) >= 0.99


# --------------------------------------------------------------------- the estimator
@pytest.mark.parametrize("method", METHODS)
def test_reported_mi_equals_sklearn_on_rows(method):
    rng = np.random.default_rng(12)
    c0, c1 = _instance(rng, 80)
    vals, y = _rows(c0, c1)
    names = np.array([f"v{i}" for i in range(80)], dtype=object)[vals]
    vc = VocabularyCompressor(7, method=method).fit(names, y)
    z = vc.transform(names)
    assert vc.n_buckets_ <= 7 and z.max() < vc.n_buckets_
    assert vc.mutual_information_ == pytest.approx(mutual_info_score(y, z), abs=1e-12)
    assert vc.mutual_information_full_ == pytest.approx(mutual_info_score(y, names), abs=1e-12)
    assert vc.mi_loss_ == pytest.approx(1 - vc.mutual_information_ / vc.mutual_information_full_)
    # buckets numbered by ascending P(C=0|z)
    bc = vc.bucket_counts_
    p0 = bc[:, 0] / bc.sum(axis=1)
    assert np.all(np.diff(p0) >= -1e-12)
    assert vc.mapping_ == {v: int(b) for v, b in zip(vc.vocabulary_, vc.bucket_of_)}


def test_contiguous_methods_cut_the_sorted_order():
    rng = np.random.default_rng(13)
    c0, c1 = _instance(rng, 300)
    for method in ("submodular", "threshold", "dp", "bucketing"):
        vc = VocabularyCompressor(12, method=method).fit_counts(np.arange(300), c0, c1)
        b_sorted = vc.bucket_of_[vc.order_]
        assert np.all(np.diff(b_sorted) >= 0)
        assert np.array_equal(np.flatnonzero(np.diff(b_sorted)) + 1, vc.split_points_)


def test_frequency_keeps_the_most_frequent_values():
    c0 = np.array([50, 1, 30, 2, 0, 9, 3])
    c1 = np.array([0, 1, 30, 2, 9, 0, 3])
    vc = VocabularyCompressor(4, method="frequency").fit_counts(list("abcdefg"), c0, c1)
    m = vc.mapping_
    top = ["c", "a", "e"]  # counts 60, 50, 9 (f also 9: ties by first appearance -> e)
    assert len({m[v] for v in top}) == 3
    rest = {m[v] for v in "bdfg"}
    assert len(rest) == 1 and rest.isdisjoint({m[v] for v in top})
    assert vc.unseen_bucket_ == rest.pop()


def test_bucketing_equal_mass():
    c0 = np.full(100, 5)
    c1 = np.arange(100)
    vc = VocabularyCompressor(4, method="bucketing").fit_counts(np.arange(100), c0, c1)
    mass = vc.bucket_counts_.sum(axis=1)
    assert vc.n_buckets_ == 4
    assert mass.max() - mass.min() <= 2 * (c0 + c1).max()


def test_divisive_is_a_kl_kmeans_fixed_point():
    rng = np.random.default_rng(14)
    c0, c1 = _instance(rng, 150)
    vc = VocabularyCompressor(6, method="divisive", tol=0.0, max_iter=500).fit_counts(
        np.arange(150), c0, c1)
    assert vc.n_iter_ < 500
    bc = vc.bucket_counts_
    q0 = bc[:, 0] / bc.sum(axis=1)
    p0 = c0 / (c0 + c1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.nan_to_num(p0[:, None] * np.log(p0[:, None] / q0[None, :]), nan=0.0) + \
            np.nan_to_num((1 - p0[:, None]) * np.log((1 - p0[:, None]) / (1 - q0[None, :])), nan=0.0)
    own = kl[np.arange(150), vc.bucket_of_]
    assert np.all(own <= kl.min(axis=1) + 1e-9)
    # the objective is the information lost
    loss = ((c0 + c1) * own).sum() / (c0 + c1).sum()
    assert loss == pytest.approx(vc.mutual_information_full_ - vc.mutual_information_, abs=1e-9)


def test_unseen_values():
    rng = np.random.default_rng(15)
    c0, c1 = _instance(rng, 50)
    vals, y = _rows(c0, c1)
    vc = VocabularyCompressor(5).fit(vals, y)
    z = vc.transform(np.array([0, 1, 10**9, -5]))
    assert z[2] == z[3] == vc.unseen_bucket_
    bc = vc.bucket_counts_
    prior = c0.sum() / (c0.sum() + c1.sum())
    q = bc[:, 0] / bc.sum(axis=1)
    with np.errstate(divide="ignore"):
        kl = prior * np.log(prior / q) + (1 - prior) * np.log((1 - prior) / (1 - q))
    assert vc.unseen_bucket_ == int(np.argmin(kl))
    vd = VocabularyCompressor(5, handle_unseen="dedicated").fit(vals, y)
    assert vd.transform([10**9])[0] == vd.n_buckets_ == 5


def test_determinism_and_clone():
    rng = np.random.default_rng(16)
    c0, c1 = _instance(rng, 2000)
    a = VocabularyCompressor(50, random_state=3).fit_counts(np.arange(2000), c0, c1)
    b = clone(a).fit_counts(np.arange(2000), c0, c1)
    c = VocabularyCompressor(50, random_state=4, refine=False).fit_counts(np.arange(2000), c0, c1)
    d = VocabularyCompressor(50, random_state=3, refine=False).fit_counts(np.arange(2000), c0, c1)
    assert np.array_equal(a.bucket_of_, b.bucket_of_)
    assert not np.array_equal(c.chosen_, d.chosen_)


def test_missing_values_are_a_category():
    vals = pd.Series(["a", None, "b", None, "a", np.nan])
    y = [0, 1, 1, 1, 0, 1]
    vc = VocabularyCompressor(2).fit(vals, y)
    assert len(vc.vocabulary_) == 3
    z = vc.transform(vals)
    assert z[1] == z[3] == z[5] == z[2] and z[0] == z[4] != z[1]


def test_validation_messages():
    with pytest.raises(ValueError, match="budget"):
        VocabularyCompressor(0).fit([1, 2], [0, 1])
    with pytest.raises(ValueError, match="method"):
        VocabularyCompressor(2, method="nope").fit([1, 2], [0, 1])
    with pytest.raises(ValueError, match="labels"):
        VocabularyCompressor(2).fit([1, 2], [0, 2])
    with pytest.raises(ValueError, match="labels"):
        VocabularyCompressor(2).fit([1, 2], [1, 1])
    with pytest.raises(ValueError, match="labels"):
        VocabularyCompressor(2).fit([1, 2, 3], [0, 1])
    with pytest.raises(ValueError, match="max_dp_values"):
        VocabularyCompressor(2, method="dp", max_dp_values=3).fit_counts(
            [1, 2, 3, 4], [1, 2, 3, 4], [4, 3, 2, 1])
    with pytest.raises(ValueError, match="min_count"):
        VocabularyCompressor(2, min_count=0).fit([1, 2], [0, 1])
    with pytest.raises(ValueError, match="occur"):
        VocabularyCompressor(2).fit_counts([1, 2], [0, 1], [0, 1])
    with pytest.raises(NotFittedError):
        VocabularyCompressor(2).transform([1])


# --------------------------------------------------------------------- export
@pytest.mark.parametrize("vocab", [
    np.arange(40) * 7 - 100,
    np.array([f"s{i}" for i in range(40)], dtype=object),
    np.array([i if i % 2 else f"x{i}" for i in range(40)], dtype=object),
])
def test_artifact_round_trip(tmp_path, vocab):
    from featagg_core.artifacts.store import load_artifact, save_artifact
    rng = np.random.default_rng(17)
    c0, c1 = _instance(rng, 40)
    vc = VocabularyCompressor(6).fit_counts(vocab, c0, c1)
    save_artifact(vc, tmp_path / "vc.zip")
    back = load_artifact(tmp_path / "vc.zip")
    assert back.get_params() == vc.get_params()
    assert back.mapping_ == vc.mapping_
    assert [type(k) for k in back.mapping_] == [type(k) for k in vc.mapping_]
    probe = list(vocab[:10]) + ["never-seen"]
    probe_arr = np.empty(len(probe), dtype=object)
    probe_arr[:] = probe
    assert np.array_equal(back.transform(probe_arr), vc.transform(probe_arr))
    assert back.mutual_information_ == vc.mutual_information_
    assert np.array_equal(back.p0_sorted_, vc.p0_sorted_)


def test_csv_and_json_exports():
    vals = np.array([3, 3, 5, 7, 7, 7, 9], dtype=object)
    vals[2] = "five"
    y = np.array([0, 1, 1, 0, 0, 1, 1])
    vc = VocabularyCompressor(2).fit(vals, y)
    doc = json.loads(vc.to_json())
    assert dict(zip(map(repr, doc["values"]), doc["buckets"])) == \
        {repr(k): v for k, v in vc.mapping_.items()}
    assert "five" in doc["values"] and 3 in doc["values"]
    df = pd.read_csv(io.StringIO(vc.to_csv()))
    assert list(df.columns) == ["value", "bucket", "count", "positives", "p_c0"]
    assert df["count"].sum() == 7 and df["positives"].sum() == 4
    assert dict(zip(df["value"].astype(str), df["bucket"])) == \
        {str(k): v for k, v in vc.mapping_.items()}


# --------------------------------------------------------------------- several columns
def _table(rng, sizes, informative):
    n_rows = 3000
    cols, logit = {}, np.full(n_rows, -0.5)
    for c, (n, inf) in enumerate(zip(sizes, informative)):
        codes = rng.integers(0, n, n_rows)
        cols[f"c{c}"] = codes
        logit += inf * rng.normal(0, 2, n)[codes]
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame(cols), y


def test_global_budget_greedy_equals_brute_force_global_greedy():
    rng = np.random.default_rng(18)
    df, y = _table(rng, [12, 9, 15], [1.0, 0.3, 0.0])
    budget = 3 + 8
    cc = compress_columns(df, y, budget, method="submodular", epsilon=1e-30, refine=False)
    # brute force: greedy on the sum of per-column F over the union of split positions
    data = {}
    for c in df.columns:
        codes = df[c].to_numpy()
        n = codes.max() + 1
        c1 = np.bincount(codes, weights=y, minlength=n)
        c0 = np.bincount(codes, minlength=n) - c1
        o = sort_order(c0, c1)
        data[c] = (c0[o], c1[o])
    S = {c: [] for c in df.columns}
    for _ in range(budget - 3):
        best = None
        for c, (a, b) in data.items():
            base = _F(a, b, S[c])
            for t in range(1, len(a)):
                if t not in S[c]:
                    g = _F(a, b, S[c] + [t]) - base
                    if best is None or g > best[0] + 1e-15:
                        best = (g, c, t)
        S[best[1]].append(best[2])
    for c in df.columns:
        assert cc.allocation[c] == len(S[c]) + 1
        assert sorted(cc.compressors[c].split_points_.tolist()) == sorted(S[c])
    assert sum(cc.allocation.values()) == budget
    # the uninformative column gets the fewest buckets
    assert cc.allocation["c2"] <= min(cc.allocation["c0"], cc.allocation["c1"])
    rep = cc.report
    assert cc.mi_loss == pytest.approx(
        (rep["I(X;C)"].sum() - rep["I(Z;C)"].sum()) / rep["I(X;C)"].sum())
    z = cc.transform(df)
    for c in df.columns:
        assert mutual_info_score(y, z[c]) == pytest.approx(cc.compressors[c].mutual_information_)


def test_uniform_and_mi_allocations():
    rng = np.random.default_rng(19)
    df, y = _table(rng, [40, 40, 3], [1.0, 0.2, 0.5])
    u = compress_columns(df, y, 30, method="bucketing", allocation="uniform")
    assert u.allocation["c2"] == 3 and sum(u.allocation.values()) == 30
    assert abs(u.allocation["c0"] - u.allocation["c1"]) <= 1
    mi = compress_columns(df, y, 30, method="frequency", allocation="mi")
    assert sum(mi.allocation.values()) == 30
    assert mi.allocation["c0"] > mi.allocation["c1"]
    with pytest.raises(ValueError, match="budget"):
        compress_columns(df, y, 2)
    with pytest.raises(ValueError, match="allocation"):
        compress_columns(df, y, 10, method="dp", allocation="greedy")
