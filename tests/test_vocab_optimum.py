"""The default vocabulary compression against the exact DP: the divide-and-conquer DP
equals the O(n^2 m) one, and the default method reaches >= 0.999 of the optimum on tied
columns (a public one among them: Amazon's ROLE_DEPTNAME, where the local moves alone
stopped at 0.9878 at m = 4)."""
import numpy as np
import pytest

from featagg_core._kernels import vocab as K
from featagg_core.utils.polling import new_stop
from featagg_core.data.samples import load_sample
from featagg_core.vocab.compressor import VocabularyCompressor
from featagg_core.vocab.counts import _Prepared


def test_divide_and_conquer_dp_equals_the_quadratic_dp():
    rng = np.random.default_rng(0)
    checked = 0
    for trial in range(400):
        n = int(rng.integers(2, 50))
        c0 = rng.integers(0, rng.integers(1, 25), n)
        c1 = rng.integers(0, rng.integers(1, 25), n)
        c0[(c0 + c1) == 0] = 1
        if c1.sum() == 0:
            continue
        prep = _Prepared(c0, c1, 1, bool(trial % 2))
        for m in (2, 3, 5, 9):
            m2 = min(m, prep.n_atoms)
            _, exact = K.dp_optimal(prep.P0a, prep.P1a, m2, new_stop())
            splits, fast = K.dp_monotone(prep.P0a, prep.P1a, m2, new_stop())
            assert fast == pytest.approx(exact, rel=1e-12, abs=1e-12)
            assert K.objective(prep.P0a, prep.P1a, splits) == pytest.approx(fast, rel=1e-12,
                                                                            abs=1e-12)
            checked += 1
    assert checked > 1000


def _tied_column(seed, n_values=300, n_rows=4000):
    """Few rows per value: many values share P(C=0|x) in {0, 1/2, 1, 1/3, ...}."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, n_values, n_rows)
    rate = rng.beta(0.5, 2.0, n_values)
    labels = (rng.random(n_rows) < rate[values]).astype(int)
    return values, labels


@pytest.mark.parametrize("m", [4, 8, 16])
def test_default_reaches_the_optimum_on_tied_columns(m):
    amazon = load_sample("amazon_employee_access")
    columns = [(amazon.table[c].to_numpy(), np.asarray(amazon.labels))
               for c in ("ROLE_DEPTNAME", "ROLE_CODE", "ROLE_FAMILY")]
    columns += [_tied_column(s) for s in range(3)]
    for values, labels in columns:
        default = VocabularyCompressor(m).fit(values, labels)
        exact = VocabularyCompressor(m, method="dp").fit(values, labels)
        assert default.n_atoms_ < len(default.vocabulary_)         # the column has ties
        assert default.mutual_information_ >= 0.999 * exact.mutual_information_
        assert default.mutual_information_ <= exact.mutual_information_ * (1 + 1e-12)


def test_polish_never_lowers_f_and_keeps_the_greedy_guarantee():
    values, labels = _tied_column(7)
    greedy = VocabularyCompressor(8, refine=False).fit(values, labels)
    polished = VocabularyCompressor(8).fit(values, labels)
    assert polished.mutual_information_ >= greedy.mutual_information_ - 1e-15
    # above max_dp_values atoms the polish is skipped: only the local moves run
    big = VocabularyCompressor(8, max_dp_values=5).fit(values, labels)
    assert greedy.mutual_information_ - 1e-15 <= big.mutual_information_ \
        <= polished.mutual_information_ + 1e-15
