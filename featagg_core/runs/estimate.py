"""How long a run will take, before it starts: a calibration of this machine and a cost
model per spec family (no streamlit; nothing here fits a model).

Signatures::

    measure_speed(threads=None) -> dict         # a short calibration, not cached
    default_speed(threads=None) -> dict         # measure_speed, cached for 5 minutes
    job_threads() -> int                        # threads a job gets on the server's runner
    estimate_seconds(data, split, spec, speed=None) -> float     # wall seconds
    estimate_breakdown(data, split, spec, speed=None) -> dict    # seconds per part
    multilabel_stats(data, split) -> stats      # the sizes, once for many estimates (stats=)
    sampling_plan(data, split, spec, speed=None, budget_s=60.0) -> dict   # a baseline's cost
                                                # and the feature sample that fits budget_s
    format_seconds(seconds) -> str              # "under a second", "12 s", "4 min", "1.5 h"

``spec`` is any spec of docs/RUN_MODEL.md (it is made canonical first; a bad spec or one
that does not fit the data raises ``ValueError``). The estimate covers what a run job does:
fitting every step on the training rows and scoring the held-out rows (valid and test).

How it works. :func:`measure_speed` times small versions of the kernels that dominate
each method, in a thread limited to :func:`job_threads` numba/OpenMP threads (what a job
gets on the dashboard's runner): DEFRAG's level split, the Xᵀ Y kernel, the
squared-hinge dual coordinate descent KTXMLC and one-vs-all train, scikit-learn's
mini-batch k-means step with centres in and out of cache, ONMtF and a small k-means,
the vocabulary greedy, and the cost of one numpy call. Each rate is in work units per
CPU second of one thread; ``wall_factor`` (wall / CPU seconds during the calibration)
carries the machine's current load into the estimate.

The cost model (``_MODEL``) turns the data's sizes - rows, non-zeros per row, features,
labels, the non-zeros of Xᵀ Y (counted exactly up to 2·10^6 training non-zeros, else
extrapolated from nested row samples), graph edges, distinct values - into work units per
kernel. Its constants (typical rounds per DEFRAG node, solver passes, tree shapes, per-call
overheads) were fitted on this repository's benchmark runs (``benchmarks/jobs_bench.py``,
results in ``benchmarks/results/jobs.md``): Bibtex, Delicious, a 20k x 50k x 5k and two
other synthetic sets, Cora, Citeseer, Adult, Amazon. Expect the right order of magnitude
(the goal is 2x either way), not a stopwatch: convergence-driven loops (k-means, the
solver's shrinking, DEFRAG's 2-means) vary with the data.
"""
from __future__ import annotations

import functools
import math
import os
import threading
import time
from typing import Dict, Optional

import numpy as np
import scipy.sparse as sp

from featagg_core.runs.calibration import calibrate
from featagg_core.utils.docstrings import fill_doc

__all__ = ["measure_speed", "default_speed", "job_threads", "estimate_seconds",
           "estimate_breakdown", "format_seconds", "multilabel_stats", "sampling_plan"]

#: seconds a cached calibration stays valid (the machine's load changes)
SPEED_MAX_AGE_S = 300.0


def format_seconds(seconds) -> str:
    """A duration as estimates are shown: "under a second", "12 s", "4 min", "1.5 h".

    Parameters
    ----------
    seconds : float or None
        The duration; None gives "unknown".

    Returns
    -------
    str
        The duration in words.
    """
    if seconds is None:
        return "unknown"
    s = float(seconds)
    if s < 1:
        return "under a second"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


# ============================================================================ calibration
def job_threads() -> int:
    """numba/OpenMP threads one job gets on the dashboard's runner.

    The cores divided by the workers (``FEATAGG_JOB_WORKERS``, default one worker per
    core), at least 1.

    Returns
    -------
    int
        The number of threads.
    """
    cores = os.cpu_count() or 1
    raw = os.environ.get("FEATAGG_JOB_WORKERS", "").strip()
    workers = cores
    if raw:
        try:
            workers = max(1, int(raw))
        except ValueError:
            workers = cores
    return max(1, cores // workers)


def measure_speed(threads: Optional[int] = None) -> Dict[str, float]:
    """Calibrate this machine (a fraction of a second, plus kernel loading the first time;
    measured in benchmarks/results/jobs.md).

    The kernels run in a helper thread limited to ``threads`` numba and OpenMP threads
    (default :func:`job_threads`), single-threaded work units are timed in CPU seconds of
    that thread.

    Parameters
    ----------
    threads : int, optional
        The numba/OpenMP threads of the helper thread; default :func:`job_threads`.

    Returns
    -------
    dict of str to float
        Rates (work units per CPU second: ``sparse``, ``defrag``, ``linear``, ``pairs``,
        ``pairs_big``, ``stream``, ``onmtf``, ``kmeans_dense``, ``vocab``, ``matvec``,
        ``dp``, ``py``), ``wall_factor`` (wall / CPU seconds while calibrating, >= 1: the
        load), ``threads`` and ``measured`` (a time stamp).
    """
    n_threads = job_threads() if threads is None else max(1, int(threads))
    box: dict = {}

    def run():
        try:
            import numba
            numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
            try:
                from threadpoolctl import threadpool_limits
                with threadpool_limits(limits=n_threads, user_api="openmp"):
                    box["speed"] = calibrate()
            except ImportError:
                box["speed"] = calibrate()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=run, name="featagg-calibration", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    speed = box["speed"]
    speed["threads"] = float(n_threads)
    speed["measured"] = time.time()
    return speed


@functools.lru_cache(maxsize=4)
def _cached_speed(bucket: int, threads: int) -> Dict[str, float]:
    return measure_speed(threads)


def default_speed(threads: Optional[int] = None) -> Dict[str, float]:
    """:func:`measure_speed`, measured at most once per ``SPEED_MAX_AGE_S`` seconds.

    The load changes, so a calibration is reused for a few minutes only; the result is
    read-only and shared by every caller of the process (a copy is returned).

    Parameters
    ----------
    threads : int, optional
        The numba/OpenMP threads to calibrate with; default :func:`job_threads`.

    Returns
    -------
    dict
        The rates of :func:`measure_speed`.
    """
    n_threads = job_threads() if threads is None else max(1, int(threads))
    return dict(_cached_speed(int(time.time() // SPEED_MAX_AGE_S), n_threads))


def warmup() -> None:
    """Compile (or load from numba's cache) the kernels only :func:`measure_speed` calls.

    The dashboard's compile workers call it with the other groups' warm-ups, so the
    server's first calibration loads every kernel it times instead of compiling one in
    the server process (see ``_estimate_calibration.warmup_kernels``).
    """
    from featagg_core.runs.calibration import warmup_kernels
    warmup_kernels()


# ============================================================================ data sizes
def _row_nnz(M, idx) -> np.ndarray:
    M = M if sp.isspmatrix_csr(M) or isinstance(M, sp.csr_array) else sp.csr_matrix(M)
    return np.diff(M.indptr)[idx].astype(np.float64)


def _xty_nnz(X, Y, idx, exact_limit: float = 2e6) -> float:
    """Non-zeros of ``X[idx]ᵀ Y[idx]`` (DEFRAG-XY's representation; KTXMLC's label vectors
    have the same pattern, transposed): exact when the rows hold at most ``exact_limit``
    non-zeros, else extrapolated from nested row samples (a power law in the row count,
    like a species-accumulation curve), capped by the trivial bounds."""
    from featagg_core._kernels.defrag import xt_y_nnz
    idx = np.asarray(idx, np.int64)
    xr = _row_nnz(X, idx)
    yr = _row_nnz(Y, idx)
    bound = min(float(np.dot(xr, yr)), float(X.shape[1]) * float(Y.shape[1]))
    if bound <= 0:
        return 0.0

    def count(rows):
        Xt = X[rows].T.tocsr()
        Ys = sp.csr_matrix(Y[rows])
        return float(xt_y_nnz(Xt.indptr.astype(np.int64), Xt.indices.astype(np.int32),
                              Ys.indptr.astype(np.int64), Ys.indices.astype(np.int32),
                              Y.shape[1]))

    if xr.sum() <= exact_limit:
        return count(idx)
    rng = np.random.default_rng(0)
    perm = idx[rng.permutation(idx.size)]
    m3 = int(min(idx.size, max(2000, exact_limit // max(xr.mean(), 1.0) // 4)))
    sizes = [max(50, m3 // 4), max(100, m3 // 2), m3]
    counts = [max(count(np.sort(perm[:m])), 1.0) for m in sizes]
    slope = np.polyfit(np.log(sizes), np.log(counts), 1)[0]
    slope = float(min(1.0, max(0.2, slope)))
    return float(min(bound, counts[-1] * (idx.size / sizes[-1]) ** slope))


class _MLStats:
    """What the multi-label cost models read: sizes of the training and held-out rows.

    Built by :func:`multilabel_stats`; read-only once built, so one object serves every
    estimate on the same dataset and split (a page estimates twenty specs at once)."""

    def __init__(self, data, split):
        from featagg_core.runs.split import row_indices
        self.fingerprint, self.split_id = data.fingerprint, split.split_id
        self.X, self.Y = data.X.tocsr(), data.Y.tocsr()
        self.train, _ = row_indices(split, "train")
        self.n = int(self.train.size)
        self.d = int(self.X.shape[1])
        self.L = int(self.Y.shape[1])
        self.xr = _row_nnz(self.X, self.train)
        self.yr = _row_nnz(self.Y, self.train)
        self.nnz = float(self.xr.sum())
        self.cross = float(np.dot(self.xr, self.yr))
        held = []
        for rows in ("valid", "test"):
            idx, part = row_indices(split, rows)
            if idx.size:
                X = data.X_test if part == "test" else data.X
                Y = data.Y_test if part == "test" else data.Y
                held.append((_row_nnz(X, idx), _row_nnz(Y, idx)))
        self.ho_xr = np.concatenate([h[0] for h in held]) if held else np.zeros(0)
        self.ho_yr = np.concatenate([h[1] for h in held]) if held else np.zeros(0)
        self.n_ho = float(self.ho_xr.size)
        self.nnz_ho = float(self.ho_xr.sum())
        self.cross_ho = float(np.dot(self.ho_xr, self.ho_yr))
        self._R = None

    @property
    def nnz_R(self) -> float:
        """nnz of Xᵀ Y over the training rows (computed once per estimate)."""
        if self._R is None:
            self._R = _xty_nnz(self.X, self.Y, self.train)
        return self._R

    def freeze(self) -> "_MLStats":
        """Compute everything now and drop the dataset's matrices (a cache of these stats
        must not keep a dataset alive after the server's store has let it go)."""
        _ = self.nnz_R
        self.X = self.Y = None
        return self


def multilabel_stats(data, split):
    """The sizes the multi-label cost models read, for many estimates on one split.

    Row non-zeros of the training and held-out rows, their cross products and the
    non-zeros of XᵀY over the training rows: a pass over the rows and a sampled
    count of XᵀY (timed in benchmarks/results/jobs.md), which every estimate on ``split`` would
    otherwise repeat. The result holds no reference to ``data``'s matrices, is read-only,
    and may be shared (the dashboard keeps one per dataset and split).

    Parameters
    ----------
    data : MultiLabelData
        The dataset.
    split : Split
        Its split.

    Returns
    -------
    object
        Pass it as ``stats=`` to :func:`estimate_seconds`, :func:`estimate_breakdown`
        and :func:`sampling_plan` with the same ``data`` and ``split``.
    """
    return _MLStats(data, split).freeze()


def _stats_for(data, split, stats):
    """``stats`` when given (checked to be of ``data`` and ``split``), else new ones."""
    if stats is None:
        return _MLStats(data, split)
    if (stats.fingerprint, stats.split_id) != (data.fingerprint, split.split_id):
        which = "split" if stats.fingerprint == data.fingerprint else "dataset"
        raise ValueError("stats must be multilabel_stats of this dataset and split, got "
                         f"those of another {which} (split {stats.split_id!r})")
    return stats


# ============================================================================ cost models
#: Constants of the cost model (fitted on the runs of benchmarks/jobs_bench.py, see the
#: module docstring). Names: <method>_<part>; each multiplies work units / a rate.
_MODEL = {
    # fixed cost of a run job (planning, row selection, scoring bookkeeping), CPU s
    "job_fixed": 0.01,
    "copy": 1.0,               # row selection and csr checks, per training/held-out nnz
    # DEFRAG
    "defrag_rep_xy": 1.0,      # xt_y work (sum_i nnz(x_i) nnz(y_i))
    "defrag_rep_x": 2.0,       # transposes, per nnz
    "defrag_rounds": 4.0,      # 2-means rounds per node (x levels x nnz(R))
    "defrag_node": 10.0,       # numpy-call equivalents per tree node
    "defrag_eval": 1.0,        # held-out representation + SSE + transform, per unit
    # KTXMLC / one-vs-all: dual coordinate descent
    "lin_pass": 1.2,           # classifiers x (nnz + row_cost) of the rows they train on
    "lin_row": 8.0,            # row_cost: a row's fixed share of a solver pass, in nnz
    "lin_task": 30.0,          # numpy-call equivalents per training task (64 children)
    "colocate": 1.0,           # how independently a point's labels fall into tree nodes
    "tree_kmeans": 7.4,        # label k-means: per tree level x nnz(R) x K
    "tree_fixed": 90_000.0,    # per tree, numpy-call equivalents
    "label_rep": 1.0,          # Yᵀ X̂, per cross unit
    "beam_node": 2.4,          # per expanded beam node x (nnz(x) + 1)
    "beam_child": 3.8,         # per scored child
    "ova_predict": 0.32,       # per held-out nnz x L^0.7
    "agg_density": 0.6,        # distinct clusters a row hits vs. independent features
    "agg_solver": 1.2,         # solver passes on agglomerated (denser) features
    # REFRAG / FIAT
    "refrag_fit": 1.0,         # per (cross + nnz(R) d0) unit
    "refrag_predict": 0.3,     # per held-out nnz x prototype entries per feature
    "fiat_fit": 1.0,           # per sum_i nnz_i min(nnz_i, d0)
    "fiat_density": 0.5,       # imputed entries per observed entry, per d0
    # k-means / Ward / random balanced baselines
    "km_pairs": 1.0,           # row-centre distance units
    "km_big": 0.65,            # out-of-cache distances cost this share of the calibrated
    "km_dense": 2.0,           # passes over the dense centres per batch
    "km_pp": 2.0,              # k-means++ distance units (scipy products)
    "km_batch": 40.0,          # numpy-call equivalents per batch
    "ward_gram": 0.1,          # sparse Gram product units / sparse rate
    "ward_dense": 0.15,        # per condensed-distance entry (fill, linkage), py units
    # graphs
    "bm_kmeans": 0.35,         # k-means restarts (points x k x dims x 30 iterations)
    "bm_kmeans_call": 200.0,   # per k-means call, numpy-call equivalents
    "bm_onmtf": 1.0,
    "bm_eigsh": 300.0,         # ARPACK iterations x (nnz(A) + n k) / onmtf rate
    "bm_select_iter": 40.0,    # numpy-call equivalents per projected-gradient iteration
    "bm_select_work": 1.0,     # per iteration x (nnz(H) + k f) / matvec rate
    "bm_precompute": 1.0,      # per sum_i nnz(x_i)^2 (YᵀY, sparse) / matvec rate
    "fs_eval_call": 200.0,     # per k-means seed of the ACC/NMI scoring
    "fs_eval_work": 1.0,
    "ndfs_iter": 40.0,         # per NDFS iteration x (nnz(X) k + n k^2) / matvec rate
    "knn": 1.0,                # brute kNN: (nnz^2 / f + 3 n^2) / matvec rate
    # vocabulary
    "vocab_rows": 20.0,        # per table cell (factorize, counts) / sparse
    "vocab_fit": 1.0,
    "vocab_dp": 1.0,           # dp: atoms^2 m / dp rate
}


def _pairs_rate(speed, centre_bytes: float) -> float:
    """Distance units per second, interpolated (in log) between centres in cache (1 MB)
    and far out of it (64 MB; real data's skewed columns hit the cache more often than the
    calibration's uniform ones, hence ``km_big``)."""
    lo, hi = speed["pairs"], speed["pairs_big"] / _MODEL["km_big"]
    if centre_bytes <= 1 << 20:
        return lo
    if centre_bytes >= 1 << 26:
        return hi
    t = (math.log(centre_bytes) - math.log(1 << 20)) / (math.log(1 << 26) - math.log(1 << 20))
    return math.exp((1 - t) * math.log(lo) + t * math.log(hi))


def _defrag_parts(st: _MLStats, p: dict, speed, C, prefix="DEFRAG") -> Dict[str, float]:
    from featagg_core.agglomeration.defrag import balanced_depth_cap
    frac = float(p.get("sample_points", 1.0))
    if p.get("representation", "XY") == "XY":
        rep = C["defrag_rep_xy"] * st.cross * frac / speed["sparse"]
        nnz_R = st.nnz_R * frac ** 0.5 * float(p.get("sample_labels", 1.0)) ** 0.5
        rep_ho = st.cross_ho
    else:
        rep = C["defrag_rep_x"] * st.nnz * frac / speed["sparse"]
        nnz_R = st.nnz * frac
        rep_ho = st.nnz_ho
    levels = balanced_depth_cap(st.d, int(p.get("d0", 8)))
    split = C["defrag_rounds"] * levels * nnz_R / speed["defrag"]
    nodes = C["defrag_node"] * (2.0 ** (levels + 1)) / speed["py"]
    ev = C["defrag_eval"] * (rep_ho + st.nnz_ho * 2) / speed["sparse"]
    return {f"{prefix}: representation": rep, f"{prefix}: tree": split + nodes,
            f"{prefix}: scoring": ev}


def _n_clusters(st: _MLStats, d0: int) -> int:
    from featagg_core.agglomeration.defrag import balanced_depth_cap
    return int(2 ** balanced_depth_cap(st.d, int(d0)))


def _agg_rows(xr: np.ndarray, K: int, C) -> np.ndarray:
    """Non-zeros per row after agglomeration into K clusters (features of one cluster
    co-occur, so fewer distinct clusters than independent draws would hit)."""
    indep = K * (1.0 - np.power(1.0 - 1.0 / max(K, 1), xr))
    return np.maximum(np.minimum(xr, 1.0), C["agg_density"] * indep)


def _tree_shape(L: int, K: int, max_leaf: int, max_depth: int):
    """(depth of the label-cluster levels, nodes per level, labels per leaf) of a K-way
    tree whose nodes split until at most ``max_leaf`` labels remain."""
    if L <= max_leaf:
        return 0, [1], float(L)
    D = int(math.ceil(math.log(L / max_leaf) / math.log(K) - 1e-12))
    D = max(1, min(D, max_depth))
    nodes = [float(K ** lv) for lv in range(D + 1)]
    return D, nodes, L / nodes[-1]


def _hits(yr: np.ndarray, N: float, rho: float) -> np.ndarray:
    """Expected distinct nodes (of N at one level) a point's labels fall into."""
    y_eff = np.where(yr > 0, 1.0 + rho * np.maximum(yr - 1.0, 0.0), 0.0)
    if N <= 1:
        return np.minimum(y_eff, 1.0)
    return N * (1.0 - np.power(1.0 - 1.0 / N, y_eff))


def _classifier_parts(st: _MLStats, clf: dict, xr, xr_ho, speed, C, solver=1.0,
                      name=None) -> Dict[str, float]:
    """KTXMLC / one-vs-all: training = the solver's passes over the rows each classifier
    trains on (all rows at the root, the rows having one of a node's labels below);
    scoring = the beam search over the held-out rows."""
    kind = clf.get("kind", "ktxmlc")
    units_row = xr + C["lin_row"]
    lin = speed["linear"] / solver
    if kind == "ova":
        L = st.L
        train = C["lin_pass"] * L * float(units_row.sum()) / lin
        tasks = C["lin_task"] * math.ceil(L / 64) / speed["py"]
        pred = C["ova_predict"] * float((xr_ho + 1.0).sum()) * L ** 0.7 / speed["linear"]
        nm = name or "one-vs-all"
        return {f"{nm}: training": train + tasks, f"{nm}: scoring": pred}
    if clf.get("form", "auto") == "auto":
        parts = _classifier_parts(st, dict(clf, form="trees"), xr, xr_ho, speed, C, solver,
                                  name)
        choosing = _form_choice_seconds(st, clf, xr, xr_ho, speed, C, solver)
        if choosing:
            parts[f"{name or 'KTXMLC K=%d' % int(clf.get('n_clusters', 2))}: choosing the "
                  "form (validation candidates)"] = choosing
        return parts
    K = int(clf.get("n_clusters", 2))
    T = int(clf.get("n_trees", 3))
    max_leaf = int(clf.get("max_leaf_labels", 100))
    beam = int(clf.get("beam_width", 10))
    D, nodes, leaf = _tree_shape(st.L, K, max_leaf, int(clf.get("max_depth", 20)))
    rho = C["colocate"]
    train_units = K * float(units_row.sum()) if D > 0 else leaf * float(units_row.sum())
    n_tasks = math.ceil((K if D > 0 else leaf) / 64)
    for lv in range(1, D + 1):
        width = K if lv < D else leaf
        train_units += width * float(np.dot(units_row, _hits(st.yr, nodes[lv], rho)))
        n_tasks += nodes[lv] * math.ceil(width / 64)
    train = C["lin_pass"] * T * train_units / lin + C["lin_task"] * T * n_tasks / speed["py"]
    trees = (C["tree_kmeans"] * T * D * st.nnz_R * K / speed["defrag"]
             + C["tree_fixed"] * T / speed["py"]
             + C["label_rep"] * st.cross / speed["sparse"])
    nm = name or f"KTXMLC K={K}"
    if D > 0 and clf.get("one_vs_all", "auto") == "auto":
        # the fit's one_vs_all="auto" rule (featagg_core.xmlc.tree_fitting.flat_is_enough):
        # the trees are grown, then replaced by one flat tree when the beam reaches every
        # leaf cluster and one-vs-all's training work is no more than the ensemble's.
        # "bisect" splits a node into min(K, ceil(labels / max_leaf)) groups.
        if clf.get("partition", "bisect") == "bisect" and st.L <= K * max_leaf:
            # one level of c leaf clusters: the root trains c classifiers on every row, a
            # cluster's L / c labels the rows with one of them
            c = float(min(K, math.ceil(st.L / max_leaf)))
            tree_units = (c * float(units_row.sum())
                          + st.L / c * float(np.dot(units_row, _hits(st.yr, c, rho))))
        else:
            c, tree_units = nodes[D], train_units
        if c <= beam and st.L * float(units_row.sum()) <= T * tree_units:
            flat = _classifier_parts(st, {"kind": "ova"}, xr, xr_ho, speed, C, solver,
                                     name=f"{nm} (one flat tree)")
            return {f"{nm}: label trees": trees, **flat}
    expanded = sum(min(beam, nodes[lv]) for lv in range(D + 1))
    scored = sum(min(beam, nodes[lv]) * K for lv in range(D)) + min(beam, nodes[D]) * leaf
    pred = T * (C["beam_node"] * expanded * float((xr_ho + 1.0).sum())
                + C["beam_child"] * scored * float(xr_ho.size)) / speed["linear"]
    return {f"{nm}: label trees": trees, f"{nm}: training": train, f"{nm}: scoring": pred}


def _form_choice_seconds(st, clf, xr, xr_ho, speed, C, solver) -> float:
    """Seconds of KTXMLC(form="auto")'s candidates (featagg_core.xmlc.form_choice): the
    flat model and the trees at C, then the leader at C/2 and 2C, each trained on 80 % of
    the rows; the C/2 and 2C candidates reuse the leader's trees and start from its duals,
    so they are priced at ``WARM_COST_SHARE`` of a cold candidate (a cold one at a full
    fit's cost on its rows: its looser tolerance saves about 15 %, kept as headroom); 0
    when there are too few rows to carve validation rows from."""
    from featagg_core.xmlc import form_choice as fc
    if int(round(fc.VALID_FRACTION * st.n)) < fc.MIN_VALID_ROWS:
        return 0.0
    max_leaf = int(clf.get("max_leaf_labels", 100))
    beam = int(clf.get("beam_width", 10))
    costs = []
    if st.L <= max_leaf or st.L <= beam * max_leaf:
        costs.append(sum(v for k, v in _classifier_parts(
            st, {"kind": "ova"}, xr, xr_ho, speed, C, solver).items() if "training" in k))
    if st.L > max_leaf:
        costs.append(sum(v for k, v in _classifier_parts(
            st, dict(clf, form="trees", one_vs_all="never"), xr, xr_ho, speed, C,
            solver).items() if "scoring" not in k))
    share = min(1.0, fc.MAX_FIT_ROWS / max(st.n * (1 - fc.VALID_FRACTION), 1.0))
    warm = fc.WARM_COST_SHARE
    return (1 - fc.VALID_FRACTION) * share * (sum(costs)
                                              + (len(fc.C_FACTORS) - 1) * warm * max(costs))


def _classifier_spec_parts(st: _MLStats, spec: dict, speed, C) -> Dict[str, float]:
    out: Dict[str, float] = {}
    clf = spec["classifier"]
    xr, xr_ho, solver = st.xr, st.ho_xr, 1.0
    df = spec.get("defrag")
    if df is not None:
        K = _n_clusters(st, df.get("d0", 8))
        if df.get("per_tree"):
            T = int(clf.get("n_trees", 3))
            for k, v in _defrag_parts(st, df, speed, C).items():
                out[k] = T * v
            one = dict(clf, n_trees=1)
            xr, xr_ho = _agg_rows(st.xr, K, C), _agg_rows(st.ho_xr, K, C)
            for k, v in _classifier_parts(st, one, xr, xr_ho, speed, C,
                                          C["agg_solver"]).items():
                out[k] = T * v
            return out
        out.update(_defrag_parts(st, df, speed, C))
        xr, xr_ho, solver = _agg_rows(st.xr, K, C), _agg_rows(st.ho_xr, K, C), C["agg_solver"]
        out["DEFRAG: agglomerating the rows"] = 2.0 * (st.nnz + st.nnz_ho) / speed["sparse"]
    if spec.get("impute") is not None:
        imp = spec["impute"]
        d0 = int((imp.get("defrag") or df or {}).get("d0", 8))
        if "defrag" in imp:
            out.update(_defrag_parts(st, imp["defrag"], speed, C, prefix="FIAT's DEFRAG"))
        fit = float(np.dot(st.xr, np.minimum(st.xr, d0)))
        out["FIAT: co-occurrence"] = C["fiat_fit"] * fit / speed["sparse"]
        grow = 1.0 + C["fiat_density"] * (d0 - 1)
        xr_ho = xr_ho * grow
        out["FIAT: imputing the held-out rows"] = 2.0 * st.nnz_ho * grow / speed["sparse"]
    out.update(_classifier_parts(st, clf, xr, xr_ho, speed, C, solver))
    if spec.get("rerank") is not None:
        rr = spec["rerank"]
        d0 = int((rr.get("defrag") or df or {}).get("d0", 8))
        if "defrag" in rr:
            out.update(_defrag_parts(st, rr["defrag"], speed, C, prefix="REFRAG's DEFRAG"))
        proto = min(float(st.L) * st.d, st.nnz_R * d0)
        out["REFRAG: prototypes"] = C["refrag_fit"] * (st.cross + proto) / speed["sparse"]
        per_feature = proto / max(st.d, 1)
        out["REFRAG: re-ranking"] = C["refrag_predict"] * st.nnz_ho * per_feature \
            / speed["sparse"]
    return out


def _feature_clustering_parts(st: _MLStats, fc: dict, speed, C) -> Dict[str, float]:
    from featagg_core.agglomeration.clustering import WARD_MAX_FEATURES, default_batch_size
    kind = fc.get("kind", "kmeans")
    K = int(fc["n_clusters"])
    d = st.d
    rep_p = {"representation": fc.get("representation", "XY")}
    dp = _defrag_parts(st, rep_p, speed, C, prefix="representation")
    out = {"scoring": dp["representation: scoring"]}
    if kind == "random_balanced":
        out["random partition"] = 3.0 * d / speed["sparse"]
        return out
    out["representation"] = dp["representation: representation"]
    xy = rep_p["representation"] == "XY"
    nnz_R = st.nnz_R if xy else st.nnz
    cols = st.L if xy else st.n
    avg = nnz_R / max(d, 1)
    mf = fc.get("max_features")
    if kind == "ward":
        m = min(d, WARD_MAX_FEATURES if mf is None else int(mf))
        nnz_s = nnz_R * m / d
        gram = C["ward_gram"] * nnz_s * nnz_s / max(cols, 1) / speed["sparse"]
        dense = C["ward_dense"] * m * m / speed["py"]
        rest = (d - m) * K * (avg + 1.0) / speed["pairs"] if m < d else 0.0
        out.update({"Ward: distances": gram, "Ward: linkage": dense,
                    "Ward: assigning the rest": rest})
        return out
    m = d if mf is None else min(d, int(mf))
    b = min(default_batch_size(K), m)
    init_size = min(max(3 * b, 3 * K), m)
    max_iter = 10
    pp_work = (2.0 + math.log(max(K, 2))) * init_size
    bytes_c = K * cols * 4.0
    rate = _pairs_rate(speed, bytes_c)
    if pp_work <= max_iter * m:
        init = C["km_pp"] * K * (2.0 + math.log(max(K, 2))) * init_size * (avg + 1.0) \
            / speed["pairs"] + K * 40.0 / speed["py"]
    else:
        init = 2.0 * bytes_c / speed["stream"]
    steps = max(1, (max_iter * m) // b)
    batches = steps * (C["km_pairs"] * b * K * (avg + 1.0) / rate
                       + C["km_dense"] * bytes_c / speed["stream"]
                       + C["km_batch"] / speed["py"])
    assign = C["km_pairs"] * d * K * (avg + 1.0) / rate
    out.update({"k-means: initial centres": init, "k-means: batches": batches,
                "k-means: assigning features": assign})
    return out


def _feature_clustering_total(st: _MLStats, fc: dict, speed) -> float:
    """Wall seconds of a feature-clustering run on precomputed stats (for sampling plans)."""
    parts = _feature_clustering_parts(st, fc, speed, _MODEL)
    parts["preparing the rows"] = _MODEL["job_fixed"] + _MODEL["copy"] * (
        st.nnz + st.nnz_ho) / speed["sparse"]
    return float(sum(parts.values())) * float(speed.get("wall_factor", 1.0))


class _GraphStats:
    def __init__(self, data, split):
        from featagg_core.runs.split import row_indices
        A = sp.csr_matrix(data.A)
        n_all = A.shape[0]
        self.train, _ = row_indices(split, "train")
        test, _ = row_indices(split, "test")
        self.n = float(self.train.size)
        frac = self.n / max(n_all, 1)
        self.nnz_A = float(A.nnz) * frac * frac
        X = sp.csr_matrix(data.X)
        self.f = float(X.shape[1])
        xr = _row_nnz(X, self.train)
        self.nnz_X = float(xr.sum())
        self.sq = float(np.dot(xr, xr))
        self.n_ho = float(test.size)
        y = getattr(data, "y", None)
        if y is None:
            self.k = 0
        else:
            from featagg_core.graph.evaluation import known_class_mask
            yy = np.asarray(y)
            self.k = int(np.unique(yy[known_class_mask(yy)]).size)


def _selection_parts(g: _GraphStats, fs: dict, speed, C) -> Dict[str, float]:
    """Graph feature selection on the training nodes' subgraph, then the k-means scoring
    (10 seeds) of the held-out nodes' selected features."""
    kind = fs.get("kind", "bmgufs")
    k = max(int(fs.get("n_blocks") or g.k or 2), 2)
    d_sel = float(fs.get("d") or g.f)
    out: Dict[str, float] = {}

    def kmeans(n, dims, calls=1):
        return calls * (C["bm_kmeans"] * n * k * dims * 30 / speed["kmeans_dense"]
                        + C["bm_kmeans_call"] / speed["py"])

    if kind == "bmgufs":
        n_cand = int(fs.get("n_candidates", 10))
        n_it = int(fs.get("n_iter_block", 100))
        per = C["bm_onmtf"] * n_it * (g.nnz_A * k + g.n * k * k) / speed["onmtf"]
        if fs.get("block_init", "spectral") == "spectral":
            per += kmeans(g.n, k)
            out["BMGUFS: spectral embedding"] = C["bm_eigsh"] * (g.nnz_A + g.n * k) \
                / speed["onmtf"]
        out["BMGUFS: block models"] = n_cand * per
        out["BMGUFS: precompute"] = C["bm_precompute"] * g.sq / speed["matvec"]
        it = int(fs.get("max_iter", 200))
        out["BMGUFS: selection"] = it * (C["bm_select_iter"] / speed["py"]
                                         + C["bm_select_work"] * (min(g.sq, g.f * g.f)
                                                                  + 3 * k * g.f)
                                         / speed["matvec"])
    elif kind in ("laplacian", "spec", "ndfs"):
        if fs.get("affinity", "graph") == "knn":
            out["kNN graph"] = C["knn"] * (g.nnz_X ** 2 / max(g.f, 1.0) + 3 * g.n * g.n) \
                / speed["matvec"]
        out["quadratic forms"] = 3.0 * (g.nnz_A * g.nnz_X / max(g.n, 1) + g.nnz_X) \
            / speed["matvec"]
        if kind == "spec":
            out["spectrum"] = C["bm_eigsh"] * (g.nnz_A + g.n * k) / speed["onmtf"] \
                + 3.0 * g.nnz_X * k / speed["matvec"]
        if kind == "ndfs":
            it = int(fs.get("n_iter", 30))
            out["NDFS"] = C["ndfs_iter"] * it * (g.nnz_X * k + g.n * k * k) \
                / speed["matvec"] + kmeans(g.n, k, calls=3)
    dims = min(d_sel, g.f)
    out["scoring (k-means x 10 seeds)"] = kmeans(g.n_ho, dims, calls=10) \
        + C["fs_eval_work"] * 10 * g.n_ho * dims / speed["matvec"]
    return out


def _vocabulary_parts(data, split, voc: dict, speed, C) -> Dict[str, float]:
    """Counting every column of the table, then each column's optimiser on its distinct
    values (the exact DP and the divisive k-means on the runs of tied P(C=0|x))."""
    import pandas as pd

    from featagg_core.runs.split import row_indices
    table = data.table
    cols = list(voc.get("columns") or table.columns)
    train, _ = row_indices(split, "train")
    method = voc.get("method", "submodular")
    m = int(voc.get("budget", 10))
    labels = np.asarray(data.labels, dtype=np.float64)[train]
    fit = 0.0
    for c in cols:
        codes, uniq = pd.factorize(table[c].to_numpy()[train], use_na_sentinel=False)
        nv = float(len(uniq))
        work = nv * math.log2(max(nv, 2.0))
        fit += C["vocab_fit"] * work / speed["vocab"] + 30.0 / speed["py"]
        if method in ("dp", "divisive"):
            pos = np.bincount(codes, weights=labels, minlength=len(uniq))
            tot = np.bincount(codes, minlength=len(uniq))
            atoms = float(np.unique(pos / np.maximum(tot, 1)).size)
            if method == "dp":
                fit += C["vocab_dp"] * atoms * atoms * min(m, atoms) / speed["dp"]
            else:
                fit += 20.0 * atoms * m / speed["matvec"]
    rows = C["vocab_rows"] * float(len(table)) * len(cols) / speed["sparse"]
    return {"vocabulary: counting": rows, "vocabulary: optimising": fit}


# ============================================================================ entry points
@fill_doc
def estimate_breakdown(data, split, spec, speed: Optional[dict] = None,
                       stats=None) -> Dict[str, float]:
    """Estimated wall seconds of each part of the run ``spec`` on ``split``.

    Parameters
    ----------
    {run_estimate_args}

    Returns
    -------
    dict of str to float
        Seconds per part, keyed by short descriptions (e.g. ``"KTXMLC K=2: training"``),
        plus ``"total"``.

    Raises
    ------
    {bad_run_spec}
    """
    from featagg_core.runs.spec import canonical_spec, check_spec_fits, spec_kind
    spec = canonical_spec(spec)
    check_spec_fits(spec, data)
    speed = default_speed() if speed is None else speed
    C = _MODEL
    kind = spec_kind(spec)
    if kind == "classifier":
        st = _stats_for(data, split, stats)
        parts = _classifier_spec_parts(st, spec, speed, C)
        copy = st.nnz + st.nnz_ho
    elif kind == "agglomeration":
        st = _stats_for(data, split, stats)
        parts = _defrag_parts(st, spec["defrag"], speed, C)
        copy = st.nnz + st.nnz_ho
    elif kind == "feature_clustering":
        st = _stats_for(data, split, stats)
        parts = _feature_clustering_parts(st, spec["feature_clustering"], speed, C)
        copy = st.nnz + st.nnz_ho
    elif kind == "feature_selection":
        g = _GraphStats(data, split)
        parts = _selection_parts(g, spec["feature_selection"], speed, C)
        copy = g.nnz_X + g.nnz_A
    else:
        parts = _vocabulary_parts(data, split, spec["vocabulary"], speed, C)
        copy = 0.0
    parts["preparing the rows"] = C["job_fixed"] + C["copy"] * copy / speed["sparse"]
    factor = float(speed.get("wall_factor", 1.0))
    out = {k: float(v) * factor for k, v in parts.items()}
    out["total"] = float(sum(out.values()))
    return out


@fill_doc
def estimate_seconds(data, split, spec, speed: Optional[dict] = None,
                     stats=None) -> float:
    """Estimated wall seconds of ``run_pipeline(data, split, spec)`` as a job.

    As a job on the dashboard's runner (fit on the training rows + scoring the held-out
    rows), from the data's sizes and this machine's measured speed.

    Parameters
    ----------
    {run_estimate_args}

    Returns
    -------
    float
        Wall seconds.

    Raises
    ------
    {bad_run_spec}
    """
    return estimate_breakdown(data, split, spec, speed, stats=stats)["total"]


def sampling_plan(data, split, spec, speed=None, budget_s: float = 60.0,
                  stats=None) -> dict:
    """What a feature-clustering baseline would cost on ``data``'s training rows, and the
    sample to fit it on when a full fit would not fit ``budget_s``, for a page to show first.

    Parameters
    ----------
    data : MultiLabelData
        The dataset.
    split : Split
        Its split (the training rows are costed).
    spec : dict
        A ``{"feature_clustering": {...}}`` spec (or its inner dict).
    speed : optional
        The machine's speed model (default :func:`default_speed`).
    budget_s : float, default 60.0
        Seconds a fit may take before sampling is suggested.
    stats : optional
        :func:`multilabel_stats` ``(data, split)``, computed once for many
        plans; None computes them here.

    Returns
    -------
    dict
        ``kind``, ``n_features``, ``n_fit`` (features the method is fitted on with this
        spec's ``max_features``), ``needs_sampling`` (the spec samples, or a full fit would
        take longer than ``budget_s``), ``seconds`` (the estimate for the spec as given),
        ``seconds_full`` (on every feature; None for Ward above ``WARD_LIMIT``),
        ``max_features_suggested`` (None when no sampling is needed; else the largest sample
        estimated to fit in ``budget_s``, at least K, or Ward's default sample), ``message``
        (one sentence for the page).

    Raises
    ------
    ValueError
        For a bad spec, a spec that does not fit the data, or more Ward clusters than its
        largest sample.
    """
    from featagg_core.agglomeration.clustering import WARD_LIMIT, WARD_MAX_FEATURES
    from featagg_core.runs.spec import canonical_spec, check_spec_fits
    inner = dict(spec.get("feature_clustering", spec))
    full_spec = canonical_spec({"feature_clustering": inner})
    check_spec_fits(full_spec, data)
    inner = full_spec["feature_clustering"]
    kind = inner["kind"]
    speed = default_speed() if speed is None else speed
    st = _stats_for(data, split, stats)
    d = st.d
    K = int(inner["n_clusters"])
    mf = inner.get("max_features")

    def secs(max_features):
        return _feature_clustering_total(st, {**inner, "max_features": max_features}, speed)

    if kind == "random_balanced":
        t = secs(None)
        return {"kind": kind, "n_features": d, "n_fit": d, "needs_sampling": False,
                "seconds": t, "seconds_full": t, "max_features_suggested": None,
                "message": f"A random balanced partition of {d:,} features: about "
                           f"{format_seconds(t)}."}
    if kind == "ward":
        m = min(d, WARD_MAX_FEATURES if mf is None else int(mf))
        if K > min(m, WARD_LIMIT):
            raise ValueError(f"Ward cannot make {K:,} clusters from a sample of at most "
                             f"{min(d, WARD_LIMIT):,} features; use k-means or fewer "
                             "clusters")
        seconds = secs(m)
        full = secs(d) if d <= WARD_LIMIT else None
        needs = d > m
        msg = (f"Ward runs on {m:,} of the {d:,} features (a seeded sample; the others join "
               f"the nearest centroid): about {format_seconds(seconds)}." if needs else
               f"Ward on all {d:,} features: about {format_seconds(seconds)}.")
        return {"kind": kind, "n_features": d, "n_fit": m, "needs_sampling": needs,
                "seconds": seconds, "seconds_full": full,
                "max_features_suggested": m if needs else None, "message": msg}
    full = secs(None)
    n_fit = d if mf is None else min(d, int(mf))
    seconds = secs(n_fit if n_fit < d else None)
    needs = n_fit < d or full > budget_s
    suggested = None
    if needs:
        if n_fit < d and seconds <= budget_s:
            suggested = n_fit
        else:                       # the largest sample (>= K) estimated within budget
            lo, hi = K, max(K, min(d, n_fit) - 1)
            if secs(lo) > budget_s:
                suggested = lo
            else:
                while hi - lo > max(16, lo // 50):
                    mid = (lo + hi) // 2
                    if secs(mid) <= budget_s:
                        lo = mid
                    else:
                        hi = mid
                suggested = lo
    if n_fit < d:
        msg = (f"k-means is fitted on {n_fit:,} of the {d:,} features (a seeded sample; the "
               f"others join the nearest centre): about {format_seconds(seconds)} instead of "
               f"{format_seconds(full)} on all of them.")
    elif full > budget_s:
        msg = (f"k-means on all {d:,} features would take about {format_seconds(full)}; on a sample "
               f"of {suggested:,} features (the others join the nearest centre) about "
               f"{format_seconds(secs(suggested))}.")
    else:
        msg = f"k-means on all {d:,} features: about {format_seconds(full)}."
    return {"kind": kind, "n_features": d, "n_fit": n_fit, "needs_sampling": needs,
            "seconds": seconds, "seconds_full": full, "max_features_suggested": suggested,
            "message": msg}
