"""Artifact checks of the graph estimators: BlockModel and BMGUFS (with its candidate
block models, each checked as a BlockModel).
"""
from __future__ import annotations

import math

import numpy as np

from featagg_core.artifacts.checks.checker import StateChecker

def _block_model(c: StateChecker) -> None:
    k = c.p_int("n_blocks", 1)
    c.p_int("n_iter", 0)
    c.p_int("random_state", 0, 2**63 - 1, none=True)
    c.p_choice("init", ("random", "spectral"))
    c.m_float("rre_", 0.0)
    n = c.m_int("n_nodes_", 1)
    n_iter = c.m_int("n_iter_", 0, 2**31)
    if k > n:
        c.fail(c._pname("n_blocks"), f"= {k} blocks for {n} nodes")
    labels = c.arr("labels_", "i", (n,), lo=0, hi=k - 1)
    c.arr("M_", "f", (k, k))
    sizes = c.arr("block_sizes_", "f", (k,), lo=0)
    c.arr("F_", "f", (n, k))
    c.arr("S_", "f", (k, k))
    c.arr("objective_", "f", (n_iter + 1,), finite=False)
    if not np.array_equal(sizes, np.bincount(labels, minlength=k).astype(sizes.dtype)):
        c.fail(c.aname("block_sizes_"), "does not count the nodes of each block")


def _bmgufs(c: StateChecker) -> None:
    fq = c.m_any("fit_quality_", optional=True)   # informational: a few named floats
    if fq is not None and not (isinstance(fq, dict) and len(fq) <= 64 and all(
            isinstance(k, str) and len(k) <= 100 and isinstance(v, (int, float))
            and not isinstance(v, bool) for k, v in fq.items())):
        c.fail(c._mname("fit_quality_"), "must map names to numbers")
    fw = c.m_any("fit_warning_", optional=True)
    if fw is not None and not (isinstance(fw, str) and len(fw) <= 2000):
        c.fail(c._mname("fit_warning_"), "must be a short string or null")
    # the fitted k and gamma (automatic choices since); informational for the views
    c.m_int("n_blocks_", 1, 100_000, optional=True)
    rule = c.m_any("n_blocks_rule_", optional=True)
    if rule is not None and not (isinstance(rule, str) and len(rule) <= 2000):
        c.fail(c._mname("n_blocks_rule_"), "must be a short string")
    g = c.m_any("gamma_", optional=True)
    if g is not None and not (isinstance(g, (int, float)) and not isinstance(g, bool)
                              and math.isfinite(g) and g >= 0):
        c.fail(c._mname("gamma_"), "must be a finite number >= 0")
    path = c.m_any("gamma_path_", optional=True)
    if path is not None and not (isinstance(path, list) and len(path) <= 10_000 and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], (int, float))
            and not isinstance(e[0], bool) and math.isfinite(e[0])
            and isinstance(e[1], int) and not isinstance(e[1], bool) and e[1] >= 0
            for e in path)):
        c.fail(c._mname("gamma_path_"), "must list [gamma, nnz] pairs")
    c.p_int("n_blocks", 1, none=True)
    c.p_float("beta_bar", 0.0, 1.0)
    c.p_float("gamma", 0.0)
    c.p_int("n_candidates", 1, 10_000)
    max_iter = c.p_int("max_iter", 0)
    c.p_int("random_state", 0, 2**63 - 1, none=True)
    c.p_float("learning_rate", 0.0, lo_open=True)
    c.p_float("delta", 0.0, lo_open=True)
    c.p_int("n_iter_block", 0)
    c.p_int("candidate", 0, none=True)
    c.p_choice("block_init", ("random", "spectral"))
    n_iter = c.m_int("n_iter_", 0, max_iter)
    f = c.m_int("n_features_in_", 1)
    timings = c.m_any("timings_", optional=True)
    if timings is not None and (not isinstance(timings, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in timings.values())):
        c.fail(c._mname("timings_"), "must map names to seconds")
    n_cand = c.m_int("n_candidates_fitted", 1, 10_000)
    idx = c.m_int("candidate_index_", 0, n_cand - 1)
    cand_params = c.m_list("candidates", n_cand)
    cand_meta = c.m_list("candidate_meta", n_cand)
    c.arr("scores_", "f", (f,), lo=0.0)
    c.arr("candidate_rre_", "f", (n_cand,), lo=0.0)
    h = n_iter + 1
    for key in ("history_L_b", "history_L_m"):
        a = c.arr(key, "f", (None,), finite=False)
        if not 1 <= a.shape[0] <= max_iter + 1:
            c.fail(c.aname(key), f"has {a.shape[0]} entries for {h} iterations")
    c.arr("history_nnz", "i", (None,), lo=0, hi=f)
    nodes = None
    for j in range(n_cand):
        bm = c.sub("BlockModel", cand_params[j], cand_meta[j], f"cand{j}_",
                   f"BMGUFS candidate {j}")
        n = bm.meta["n_nodes_"]
        if nodes is not None and n != nodes:
            c.fail(c._mname("candidate_meta"), f"candidate {j} has {n} nodes, candidate 0 "
                   f"{nodes}")
        nodes = n
    k = int(cand_params[idx]["n_blocks"])
    c.arr("target_similarity_", "f", (k, k))
    c.arr("induced_similarity_", "f", (k, k))


#: class name -> check of its state
CHECKS = {"BlockModel": _block_model, "BMGUFS": _bmgufs}
