"""Artifact checks of the vocabulary compressor: its vocabulary, counts, value order,
buckets and split points (re-derived from the counts, not trusted).
"""
from __future__ import annotations

import numpy as np

from featagg_core.artifacts.checks.checker import StateChecker

def _vocabulary(c: StateChecker) -> None:
    import pandas as pd

    from featagg_core.vocab.compressor import METHODS
    from featagg_core.vocab.counts import _Prepared
    c.p_int("budget", 1)
    method = c.p_choice("method", METHODS)
    c.p_int("random_state", None, None, none=True)
    c.p_float("epsilon", 0.0, 1.0, none=True)
    c.p_bool("refine")
    unseen_mode = c.p_choice("handle_unseen", ("prior", "dedicated"))
    min_count = c.p_int("min_count", 1)
    merge_ties = c.p_bool("merge_ties")
    c.p_int("max_iter", 1)
    c.p_float("tol", 0.0)
    c.p_int("max_dp_values", 1)
    if c.has("vocabulary"):
        vocab = c.arr("vocabulary", "i", (None,))
        values = pd.Index(vocab)
    else:
        vocab = c.m_list("vocabulary")
        if not all(v is None or isinstance(v, (str, int, float, bool)) for v in vocab):
            c.fail(c._mname("vocabulary"), "holds values that are not str, int, float, "
                                           "bool or null")
        values = pd.Index(np.array(vocab, dtype=object) if vocab else np.zeros(0, object),
                          dtype=object)
    V = len(values)
    if V < 1:
        c.fail(c._mname("vocabulary"), "is empty")
    if not values.is_unique:
        c.fail(c._mname("vocabulary") if not c.has("vocabulary") else c.aname("vocabulary"),
               "names a value twice")
    counts = c.arr("counts", "i", (V, 2), lo=0, hi=2**53)
    if counts[:, 0].sum() == 0 or counts[:, 1].sum() == 0:
        c.fail(c.aname("counts"), "both classes must occur")
    order = c.permutation("order", V)
    # forged counts may pool rare values of total count 0 (a NaN key): the order check
    # below still decides, without a RuntimeWarning in the server log
    with np.errstate(invalid="ignore", divide="ignore"):
        prep = _Prepared(counts[:, 0].astype(np.int64), counts[:, 1].astype(np.int64),
                         min_count, merge_ties)
    if not np.array_equal(order, prep.order):
        c.fail(c.aname("order"), "is not the order of the values by P(C=0|x)")
    n_buckets = c.m_int("n_buckets_", 1, V)
    bucket_of = c.arr("bucket_of", "i", (V,), lo=0, hi=n_buckets - 1)
    if int(bucket_of.max()) != n_buckets - 1:
        c.fail(c._mname("n_buckets_"), "is not the number of buckets used")
    bc = c.arr("bucket_counts", "i", (n_buckets, 2), lo=0)
    for j in (0, 1):
        if not np.array_equal(bc[:, j], np.bincount(bucket_of, weights=counts[:, j],
                                                    minlength=n_buckets).astype(np.int64)):
            c.fail(c.aname("bucket_counts"), "does not add up the counts of each bucket")
    c.m_int("n_atoms_", 1, V)
    for key in ("mutual_information_", "mutual_information_full_"):
        c.m_float(key)
    c.m_float("mi_loss_", 0.0, 1.0)
    for key in ("fit_time_", "optimize_time_"):
        c.m_float(key, 0.0, none=True)
    hi = n_buckets if unseen_mode == "dedicated" else n_buckets - 1
    c.m_int("unseen_bucket_", 0, hi)
    boundaries = prep.bpos
    chosen = c.arr("chosen", "i", (None,), lo=1, hi=max(V - 1, 1))
    if chosen.size and not np.isin(chosen, boundaries).all():
        c.fail(c.aname("chosen"), "holds a split that is not an atom boundary")
    c.arr("gains", "f", (chosen.shape[0],))
    levels = c.arr("levels", "i", (None,))
    if levels.shape[0] not in (0, chosen.shape[0]):
        c.fail(c.aname("levels"), f"has {levels.shape[0]} entries for {chosen.shape[0]} splits")
    has_splits = c.m_choice("has_splits", (True, False))
    if has_splits:
        sp_ = c.arr("split_points", "i", (None,), lo=1, hi=max(V - 1, 1))
        if sp_.size > 1 and np.any(np.diff(sp_) <= 0):
            c.fail(c.aname("split_points"), "is not strictly increasing")
        if sp_.size and not np.isin(sp_, boundaries).all():
            c.fail(c.aname("split_points"), "holds a split that is not an atom boundary")
    if method in ("submodular", "threshold") and not has_splits:
        c.fail(c._mname("has_splits"), f"method {method!r} always has split points")


#: class name -> check of its state
CHECKS = {"VocabularyCompressor": _vocabulary}
