"""BMGUFS's protocol as experiments (part of :mod:`featagg_core.experiment`).

Every selection is fitted on the subgraph induced by the split's training nodes and judged
on the held-out nodes by k-means (k = classes) on their selected feature columns, with the
evaluation path's helper (``_evaluation._selection_scores``, i.e.
:func:`featagg_core.graph.evaluation.evaluate_selection`): ACC and NMI, mean over seeds.

* :func:`bmgufs_protocol` — BMGUFS against the baselines at several d, with the paper's
  gamma grid walked down per d until ``nnz(r) >= d`` (one BMGUFS run per d through
  ``run_pipeline``; the baselines rank the features once and are cut at every d), and the
  block-model fit check (RRE of every candidate, its lift over a random partition, the
  "fits poorly" warning) and how the number of blocks was chosen.
* :func:`bmgufs_heatmap` — ACC/NMI over the authors' grid beta_bar in {0, 0.1, …, 1} x
  gamma in {1, 2, 3} at one d; the block models and H are computed once and shared.
* :func:`bmgufs_robustness` — the paper's robustness check (its Fig. 3): a fraction p of
  the training subgraph's edges is moved to random node pairs (the same number of edges
  removed and added, seeded, nested in p), BMGUFS is refitted on the perturbed graph and
  its selection scored as above; the graph-based Laplacian score and the graph-free
  variance ranking are scored alongside.
"""
from __future__ import annotations

import time
import warnings
from typing import Callable, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.runs.experiments.base import Experiment, run_specs
from featagg_core.utils.docstrings import fill_doc

__all__ = ["bmgufs_protocol", "bmgufs_heatmap", "bmgufs_robustness", "perturb_edges",
           "DEFAULT_SELECTION_DS", "PERTURBATIONS"]

DEFAULT_SELECTION_DS = (16, 64, 200)
PERTURBATIONS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def _check_graph(data, split):
    from featagg_core.runs.split import check_split_fits
    check_split_fits(data, split)
    if data.kind != "graph":
        raise ValueError(f"BMGUFS experiments need a graph dataset, got a {data.kind} one")
    if data.y is None:
        raise ValueError("the graph's nodes have no classes, so the selections cannot be "
                         "judged by clustering accuracy; load a graph with node classes")


def _scores(part, selected, n_seeds, cancel=None):
    """ACC/NMI of k-means on the selected columns of the held-out nodes with a known class
    (what ``_evaluation._selection_scores`` computes), checking ``cancel`` before every
    seed's k-means."""
    from featagg_core.utils.cancel import check_cancel
    from featagg_core.runs.evaluation import _known
    from featagg_core.graph.evaluation import evaluate_selection
    y = np.asarray(part.y)
    if np.unique(y[_known(y)]).size < 2:
        raise ValueError("the held-out nodes have fewer than two classes: nothing to judge")
    ev = evaluate_selection(part.X, y, np.asarray(selected, np.int64), n_seeds=int(n_seeds),
                            random_state=0, progress=lambda f, m: check_cancel(cancel))
    return {"ACC": ev["acc_mean"], "ACC sd": ev["acc_sd"], "NMI": ev["nmi_mean"],
            "NMI sd": ev["nmi_sd"], "d used": int(np.asarray(selected).size)}


# ----------------------------------------------------------------------------- protocol
@fill_doc
def bmgufs_protocol(data, split, ds: Sequence[int] = DEFAULT_SELECTION_DS, *,
                    bmgufs: Optional[dict] = None, baselines: Optional[dict] = None,
                    n_seeds: int = 3, rows: str = "test", progress: Optional[Callable] = None,
                    cancel=None) -> Experiment:
    """BMGUFS (gamma kept per d) against the baselines at every d (module docstring).

    Parameters
    ----------
    {graph_experiment_data}
    ds : sequence of int, default=DEFAULT_SELECTION_DS
        The numbers of selected features.
    bmgufs : dict, optional
        Extra BMGUFS spec keys (e.g. ``{"n_candidates": 3, "n_blocks": 7}``; the gamma
        walk starts at ``gamma``, default 3 = the top of the paper's grid).
    baselines : dict, optional
        Title -> feature_selection sub-spec (default the page's
        :data:`featagg_core.experiment.SELECTION_BASELINES`).
    {graph_scoring}
    {experiment_progress}

    Returns
    -------
    Experiment
        Table ``"selection"``: one row per (method, d) with ACC, NMI, their sd and, for
        BMGUFS, gamma and nnz(r); the summary holds the block-model check of the first
        BMGUFS run.

    Raises
    ------
    {not_a_graph}
    """
    from featagg_core.utils.cancel import Cancelled, cancelling_progress
    from featagg_core.runs.evaluation import (
        SELECTION_BASELINES,
        _rows,
        feature_selection_comparison,
    )
    _check_graph(data, split)
    t0 = time.perf_counter()
    f = int(data.X.shape[1])
    ds = sorted({int(d) for d in ds if 1 <= int(d) <= f}) or [f]
    extra = dict(bmgufs or {})
    extra.setdefault("gamma", 3.0)
    specs = [{"feature_selection": {"kind": "bmgufs", "d": d, "keep_d": True, **extra}}
             for d in ds]
    exp = Experiment("bmgufs_protocol", "BMGUFS against the baselines",
                     {"ds": ds, "bmgufs": extra, "n_seeds": int(n_seeds), "rows": rows,
                      "baselines": sorted((baselines or SELECTION_BASELINES))},
                     split_id=split.split_id)
    runs, cancelled = run_specs(data, split, specs,
                                progress=cancelling_progress(progress, cancel, 0.0, 0.6),
                                cancel=cancel)
    exp.runs = runs
    part = _rows(data, split, rows)
    table: List[dict] = []
    for d, run in zip(ds, runs):
        if run.status != "done":
            table.append({"method": "BMGUFS", "d": d, "status": run.status,
                          "message": run.message})
            continue
        sel = run.pipeline.selector
        table.append({"method": "BMGUFS", "d": d, "status": "done",
                      "gamma": float(sel.gamma_), "nnz(r)": int(sel.n_nonzero_),
                      "run_id": run.run_id,
                      **_scores(part, run.pipeline.selected_, n_seeds, cancel)})
    if not cancelled:
        try:
            comp = feature_selection_comparison(
                data, split, methods=baselines, ds=ds, rows=rows, n_seeds=n_seeds,
                progress=cancelling_progress(progress, cancel, 0.6, 1.0), cancel=cancel)
            for title, per_d in comp["methods"].items():
                for d in comp["ds"]:
                    ev = per_d[d]
                    table.append({"method": title, "d": int(d), "status": "done",
                                  "ACC": ev["acc_mean"], "ACC sd": ev["acc_sd"],
                                  "NMI": ev["nmi_mean"], "NMI sd": ev["nmi_sd"],
                                  "d used": int(ev.get("d", d))})
        except Cancelled:
            cancelled = True
    exp.tables["selection"] = table
    first = next((r for r in runs if r.status == "done"), None)
    if first is not None:
        sel = first.pipeline.selector
        exp.summary["block_models"] = {
            "n_blocks": int(sel.n_blocks_), "rule": sel.n_blocks_rule_,
            "rre": [float(x) for x in sel.candidate_rre_], **sel.fit_quality_,
            "warning": sel.fit_warning_}
        exp.tables["block_models"] = [{"candidate": i, "RRE": float(x),
                                       "chosen": i == int(sel.candidate_index_)}
                                      for i, x in enumerate(sel.candidate_rre_)]
        exp.summary["gamma_per_d"] = {int(r["d"]): r["gamma"] for r in table
                                      if r["method"] == "BMGUFS" and "gamma" in r}
    exp.verdict = _protocol_verdict(table, exp.summary)
    exp.status = "cancelled" if cancelled else "done"
    exp.seconds = time.perf_counter() - t0
    return exp


def _protocol_verdict(table, summary) -> List[str]:
    out = []
    bm = [r for r in table if r["method"] == "BMGUFS" and r.get("status") == "done"]
    others = [r for r in table if r["method"] not in ("BMGUFS", "all features")
              and r.get("status") == "done"]
    allf = next((r for r in table if r["method"] == "all features"), None)
    for r in bm:
        rivals = [o for o in others if o["d"] == r["d"]]
        line = f"d = {r['d']}: BMGUFS ACC {100 * r['ACC']:.1f} % (γ = {r['gamma']:g})"
        if rivals:
            best = max(rivals, key=lambda o: o["ACC"])
            line += f", best baseline {best['method']} {100 * best['ACC']:.1f} %"
        if allf is not None:
            line += f", all features {100 * allf['ACC']:.1f} %"
        out.append(line + ".")
    blocks = summary.get("block_models")
    if blocks:
        out.append("Blocks: " + blocks["rule"] + ".")
        if blocks.get("warning"):
            out.append("Warning: " + blocks["warning"] + ".")
    return out


# ----------------------------------------------------------------------------- heat map
def _training_graph(data, split):
    from featagg_core.runs.split import take_rows
    from featagg_core.graph.inputs import check_adjacency, check_node_features
    train = take_rows(data, split, "train")
    A = check_adjacency(train.A)
    return train, A, check_node_features(train.X, A.shape[0])


def _labels_for_k(train):
    from featagg_core.runs.steps import _n_classes
    return train.y if _n_classes(train.y) > 0 else None


def _heatmap_cells(cells, grid, kw, prob, max_iter, eta, d, part, n_seeds, progress, cancel):
    """Fill ``grid`` cell by cell (a cancel leaves the finished cells in it)."""
    from featagg_core.utils.cancel import cancelling_progress, check_cancel
    from featagg_core.graph.bmgufs import BMGUFS
    for i, (b, g) in enumerate(cells):
        check_cancel(cancel)
        cancelling_progress(progress, cancel, 0.3, 1.0)(i / len(cells),
                                                        f"β̄ = {b:g}, γ = {g:g}")
        cell = BMGUFS(**dict(kw, beta_bar=b, gamma=g))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cell._set_selection(prob, b, g, max_iter, eta,
                                lambda stage, fr, msg: check_cancel(cancel))
            r = cell.scores_
            order = np.argsort(-r, kind="stable")
            nnz = int(np.count_nonzero(r))
            sel = order[:min(d, nnz)] if nnz else order[:0]
        row = {"beta_bar": b, "gamma": g, "nnz(r)": nnz, "nnz below d": nnz < d}
        if sel.size:
            row.update(_scores(part, sel, n_seeds, cancel))
        grid.append(row)


@fill_doc
def bmgufs_heatmap(data, split, d: int = 64, betas: Optional[Sequence[float]] = None,
                   gammas: Optional[Sequence[float]] = None, *, bmgufs: Optional[dict] = None,
                   n_seeds: int = 3, rows: str = "test", progress: Optional[Callable] = None,
                   cancel=None) -> Experiment:
    """ACC/NMI of BMGUFS's top-d features over beta_bar x gamma.

    Default the authors' grids, :data:`featagg_core.graph.selection_problem.PAPER_BETAS` x
    ``PAPER_GAMMAS``. One set of candidate block models and one precomputed objective serve
    every cell.

    Parameters
    ----------
    {graph_experiment_data}
    d : int, default=64
        Features selected.
    betas, gammas : sequence of float, optional
        The grid.
    bmgufs : dict, optional
        Extra BMGUFS spec keys.
    {graph_scoring}
    {experiment_progress}

    Returns
    -------
    Experiment
        Table ``"grid"``: beta_bar, gamma, nnz(r), ACC, NMI (a cell whose nnz(r) < d uses
        its nnz(r) features and says so).

    Raises
    ------
    {not_a_graph}
    """
    from featagg_core.graph.selection_problem import PAPER_BETAS, PAPER_GAMMAS, SelectionProblem
    from featagg_core.utils.cancel import Cancelled, cancelling_progress
    from featagg_core.runs.evaluation import _rows
    from featagg_core.graph.bmgufs import BMGUFS
    _check_graph(data, split)
    t0 = time.perf_counter()
    betas = [float(b) for b in (PAPER_BETAS if betas is None else betas)]
    gammas = [float(g) for g in (PAPER_GAMMAS if gammas is None else gammas)]
    d = int(min(max(1, d), data.X.shape[1]))
    kw = {k: v for k, v in (bmgufs or {}).items() if k not in ("beta_bar", "gamma", "d",
                                                               "keep_d", "kind")}
    exp = Experiment("bmgufs_heatmap", f"BMGUFS over β̄ × γ (d = {d})",
                     {"d": d, "betas": betas, "gammas": gammas, "bmgufs": kw,
                      "n_seeds": int(n_seeds), "rows": rows}, split_id=split.split_id)
    train, A, Y = _training_graph(data, split)
    part = _rows(data, split, rows)
    model = BMGUFS(**kw)
    beta0, gamma0, _, max_iter, eta, delta, _ = model._validate_params()
    report = cancelling_progress(progress, cancel, 0.0, 0.3)
    cands = model.fit_block_models(A, _labels_for_k(train), progress=lambda s, fr, m:
                                   report(fr, f"block models: {m}"))
    _, idx, _ = model._candidates(A, _labels_for_k(train), None, cands, None)
    bm = cands[idx]
    prob = SelectionProblem(Y, bm.labels_, bm.M_, delta)
    cells = [(b, g) for b in betas for g in gammas]
    grid = []
    try:
        _heatmap_cells(cells, grid, kw, prob, max_iter, eta, d, part, n_seeds, progress,
                       cancel)
    except Cancelled:
        exp.status, exp.message = "cancelled", f"stopped after {len(grid)} of {len(cells)} cells"
    exp.tables["grid"] = grid
    ok = [r for r in grid if "ACC" in r]
    if ok:
        best = max(ok, key=lambda r: r["ACC"])
        exp.summary["best"] = {"beta_bar": best["beta_bar"], "gamma": best["gamma"],
                               "ACC": best["ACC"], "NMI": best["NMI"]}
        exp.summary["block_rre"] = float(bm.rre_)
        exp.verdict.append(
            f"Best cell at d = {d}: β̄ = {best['beta_bar']:g}, γ = {best['gamma']:g} with ACC "
            f"{100 * best['ACC']:.1f} % and NMI {100 * best['NMI']:.1f} % (over {len(ok)} "
            f"cells, ACC {100 * min(r['ACC'] for r in ok):.1f}–"
            f"{100 * max(r['ACC'] for r in ok):.1f} %). This picks with the labels of the "
            f"held-out nodes: an upper bound, not a tuned result.")
    short = sum(r["nnz below d"] for r in grid)
    if short:
        exp.verdict.append(f"{short} of {len(grid)} cells keep fewer than {d} non-zero "
                           "weights and are scored on those.")
    exp.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, "done")
    return exp


# ----------------------------------------------------------------------------- robustness
def perturb_edges(A: sp.csr_matrix, fraction: float, random_state: int = 0) -> sp.csr_matrix:
    """``A`` with ``round(fraction * E)`` of its E undirected edges moved to random node pairs.

    The new pairs were not edges (no self loops; binary, symmetric). For one seed the
    removed and added edges are nested in ``fraction`` (the first ones of one
    permutation), so the curve over fractions is a single perturbation growing. Edge
    weights become 1.

    Parameters
    ----------
    A : sparse matrix of shape (n, n)
        The symmetric adjacency matrix.
    fraction : float in [0, 1]
        The share of the edges to move.
    random_state : int, default=0
        Seeds the permutation.

    Returns
    -------
    scipy.sparse.csr_matrix
        The perturbed adjacency matrix.
    """
    A = sp.csr_matrix(A)
    n = A.shape[0]
    up = sp.triu(A, k=1).tocoo()
    E = up.nnz
    rng = np.random.default_rng(random_state)
    order = rng.permutation(E)
    k = int(round(float(fraction) * E))
    keep = np.sort(order[k:])
    rows, cols = up.row[keep], up.col[keep]
    existing = set(zip(up.row.tolist(), up.col.tolist()))
    # random candidate pairs from a stream independent of the fraction (nested additions)
    add_r, add_c = [], []
    gen = np.random.default_rng([random_state, 1])
    seen = set()
    while len(add_r) < k:
        a = gen.integers(0, n, size=2 * (k - len(add_r)) + 16)
        b = gen.integers(0, n, size=a.size)
        for i, j in zip(a.tolist(), b.tolist()):
            if i == j:
                continue
            i, j = (i, j) if i < j else (j, i)
            if (i, j) in existing or (i, j) in seen:
                continue
            seen.add((i, j))
            add_r.append(i)
            add_c.append(j)
            if len(add_r) == k:
                break
    r = np.concatenate([rows, np.asarray(add_r, np.int64)])
    c = np.concatenate([cols, np.asarray(add_c, np.int64)])
    out = sp.csr_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n))
    out.sum_duplicates()
    out.data[:] = 1.0
    return out


def _robustness_levels(fractions, curve, A, Y, d, kw, labels, Xf, part, n_seeds, var_scores,
                       random_state, progress, cancel):
    """Fill ``curve`` level by level (a cancel leaves the finished levels in it)."""
    from featagg_core.graph import baselines as fsb
    from featagg_core.utils.cancel import cancelling_progress, check_cancel
    from featagg_core.graph.bmgufs import BMGUFS
    for i, p in enumerate(fractions):
        check_cancel(cancel)
        cb = cancelling_progress(progress, cancel, i / len(fractions),
                                 (i + 1) / len(fractions))
        Ap = perturb_edges(A, p, random_state)
        if Ap.nnz == 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            m = BMGUFS(**kw).fit_gamma_grid(Ap, Y, d, labels,
                                            progress=lambda s, fr, msg: cb(
                                                0.8 * fr, f"{100 * p:.0f} % moved: {msg}"))
            sel = m.select(d)
        curve.append({"fraction": p, "method": "BMGUFS", "gamma": float(m.gamma_),
                      "RRE": float(m.block_model_.rre_),
                      **_scores(part, sel, n_seeds, cancel)})
        lap = fsb.rank_features(fsb.laplacian_score(Xf, sp.csr_matrix(Ap, dtype=np.float64)),
                                False)[:d]
        curve.append({"fraction": p, "method": "Laplacian score (graph)",
                      **_scores(part, lap, n_seeds, cancel)})
        curve.append({"fraction": p, "method": "variance (no graph)", **var_scores})
        cb(1.0, f"{100 * p:.0f} % of the edges moved: scored")


@fill_doc
def bmgufs_robustness(data, split, d: int = 64,
                      fractions: Sequence[float] = PERTURBATIONS, *,
                      bmgufs: Optional[dict] = None, n_seeds: int = 3, rows: str = "test",
                      random_state: int = 0, progress: Optional[Callable] = None,
                      cancel=None) -> Experiment:
    """ACC/NMI under random edge moves (module docstring).

    BMGUFS (gamma kept for d), the Laplacian score on the graph and the variance ranking
    when a fraction of the training subgraph's edges is moved at random.

    Parameters
    ----------
    {graph_experiment_data}
    d : int, default=64
        Features selected.
    fractions : sequence of float, default=PERTURBATIONS
        Fractions of the edges moved.
    bmgufs : dict, optional
        Extra BMGUFS spec keys.
    {graph_scoring}
    random_state : int, default=0
        Seeds the perturbations.
    {experiment_progress}

    Returns
    -------
    Experiment
        Table ``"curve"``: fraction, method, ACC, NMI (+ the RRE of BMGUFS's block model).

    Raises
    ------
    {not_a_graph}
    """
    from featagg_core.graph import baselines as fsb
    from featagg_core.utils.cancel import Cancelled
    from featagg_core.runs.evaluation import _rows
    _check_graph(data, split)
    t0 = time.perf_counter()
    fractions = [float(p) for p in fractions]
    d = int(min(max(1, d), data.X.shape[1]))
    kw = {k: v for k, v in (bmgufs or {}).items() if k not in ("d", "keep_d", "kind")}
    kw.setdefault("gamma", 3.0)
    kw.setdefault("n_candidates", 3)
    exp = Experiment("bmgufs_robustness", f"Robustness to moved edges (d = {d})",
                     {"d": d, "fractions": fractions, "bmgufs": kw, "n_seeds": int(n_seeds),
                      "rows": rows, "random_state": int(random_state)},
                     split_id=split.split_id)
    train, A, Y = _training_graph(data, split)
    part = _rows(data, split, rows)
    labels = _labels_for_k(train)
    Xf = sp.csr_matrix(train.X, dtype=np.float64)
    var_sel = fsb.rank_features(fsb.variance_score(Xf), True)[:d]
    var_scores = _scores(part, var_sel, n_seeds)
    curve = []
    try:
        _robustness_levels(fractions, curve, A, Y, d, kw, labels, Xf, part, n_seeds,
                           var_scores, random_state, progress, cancel)
    except Cancelled:
        exp.status, exp.message = "cancelled", f"stopped after {len(curve) // 3} levels"
    exp.tables["curve"] = curve
    bm = [r for r in curve if r["method"] == "BMGUFS"]
    if len(bm) >= 2:
        first, last = bm[0], bm[-1]
        drop = first["ACC"] - last["ACC"]
        exp.summary = {"ACC at 0": first["ACC"], "ACC at max": last["ACC"],
                       "max fraction": last["fraction"]}
        exp.verdict.append(
            f"Moving {100 * last['fraction']:.0f} % of the edges changes BMGUFS's ACC from "
            f"{100 * first['ACC']:.1f} % to {100 * last['ACC']:.1f} % "
            f"({'-' if drop >= 0 else '+'}{abs(100 * drop):.1f} points); the graph-free "
            f"variance ranking stays at {100 * var_scores['ACC']:.1f} %.")
    exp.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, "done")
    return exp
