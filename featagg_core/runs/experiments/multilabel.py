"""The DEFRAG and KTXMLC papers' experiments as sets of runs on one split (part of
:mod:`featagg_core.experiment`; docs/RUN_MODEL.md).

Each returns an :class:`~featagg_core.runs.experiments.base.Experiment`: the
:class:`~featagg_core.runs.run.Run` of every pipeline it fitted, the tables built from those
runs, a summary and a few sentences that say what the numbers mean.

* :func:`defrag_tradeoff` — the DEFRAG paper's d0 trade-off: the same classifier settings
  on raw features and on DEFRAG features for every d0 (default 4, 8, 16, 32), on KTXMLC and
  one-vs-all, and the paper's ensemble of DEFRAG realisations (one per tree,
  ``"defrag": {"per_tree": true}``); P@k, PSP@k, coverage@k, train and predict time,
  model size and number of features, paired by classifier. Each d0's DEFRAG is fitted once
  and reused by the classifiers (``run_pipeline(base=...)``; the train time of a run that
  reused it still counts the DEFRAG fit). Training times are honest
  (:func:`time_rows`, :mod:`featagg_core.utils.timing`): kernels compiled before any clock,
  a fast fit timed again until its repeats cover 0.2 s, a speed-up stated only outside the
  spread of the repeats, KTXMLC that kept one flat tree reported once, as one-vs-all. The
  verdict names the largest d0 that keeps >= 98 % of the raw P@1 and how it trains.
* :func:`ktxmlc_sweep` — P@k and time against the number of trees T or the branching K
  (a fine grid, 2 to 64 with the paper's 5, 6, 10), next to the K elbow of the training
  rows' label vectors (:func:`featagg_core.runs.evaluation.elbow`).

Graph and table experiments live in :mod:`featagg_core.runs.experiments.graph` and
:mod:`featagg_core.runs.experiments.table`. Each experiment takes ``progress(fraction,
message)`` and ``cancel`` (``threading.Event``-like): a cancel stops the run in progress
(its Run is "cancelled") and the experiment returns what finished, ``status="cancelled"``.
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from featagg_core.runs.experiments.base import Experiment, run_specs
from featagg_core.utils.docstrings import fill_doc

__all__ = ["defrag_tradeoff", "ktxmlc_sweep", "time_rows", "speed_phrase", "warm_kernels", "DEFAULT_D0S", "DEFAULT_TREES", "DEFAULT_KS",
           "KEEP_P1"]

DEFAULT_D0S = (4, 8, 16, 32)
DEFAULT_TREES = (1, 2, 3, 5, 8)
#: K grid of the KTXMLC sweep: 2..64 with the KTXMLC paper's 5, 6 and 10
DEFAULT_KS = (2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64)
#: share of the raw P@1 a DEFRAG setting must keep to count as "no real loss"
KEEP_P1 = 0.98
CLASSIFIER_TITLES = {"ktxmlc": "KTXMLC", "ova": "One-vs-all", "per_tree": "KTXMLC, DEFRAG per tree"}


def _train_seconds(run, defrag_seconds: Optional[float] = None, cpu: bool = False) -> float:
    """Fit time of a classifier run: every step's seconds (CPU seconds with ``cpu``), the
    DEFRAG it reused counted at the time its own fit took."""
    t = run.timings
    keys = ("defrag_s", "classifier_s", "rerank_s", "impute_s")
    if cpu:
        keys = tuple(k[:-2] + "_cpu_s" for k in keys)
        if not any(k in t for k in keys):
            return math.nan
    s = sum(float(t.get(k, 0.0)) for k in keys)
    if "defrag" in run.reused and defrag_seconds is not None:
        s += defrag_seconds
    return s


def _n_features(run) -> int:
    pipe = run.pipeline
    if pipe.per_tree:
        return int(round(np.mean([d.n_clusters_ for d in pipe.classifier.defrags_])))
    if pipe.defrag is not None:
        return int(pipe.defrag.n_clusters_)
    return int(pipe.n_features_in_)


def _row(run, ks, extra: dict, defrag_seconds=None, defrag_cpu=None) -> dict:
    m = run.metrics.get("test", {})
    out = dict(extra)
    out.update({"run": run.name, "run_id": run.run_id, "status": run.status})
    if run.status != "done":
        out["message"] = run.message
        return out
    for name in ("P", "PSP", "coverage", "nDCG"):
        for k in ks:
            key = f"{name}@{k}"
            if key in m:
                out[key] = m[key]
    out.update({"features": _n_features(run),
                "train_s": _train_seconds(run, defrag_seconds),
                "train_cpu_s": _train_seconds(run, defrag_cpu, cpu=True),
                "predict_ms_per_point": float(run.timings.get("predict_ms_per_point", 0.0)),
                "model_bytes": int(run.model_sizes.get("total", 0))})
    return out


def _progress_split(progress, lo, hi):
    from featagg_core.utils.cancel import cancelling_progress
    return cancelling_progress(progress, None, lo, hi)


# ----------------------------------------------------------------------------- d0 curve
def _classifier_params(kind: str, params: Optional[dict]) -> dict:
    p = dict(params or {})
    p["kind"] = "ktxmlc" if kind in ("ktxmlc", "per_tree") else "ova"
    return p


@fill_doc
def defrag_tradeoff(data, split, d0s: Sequence[int] = DEFAULT_D0S,
                    classifiers: Sequence[str] = ("ktxmlc", "ova"), *,
                    per_tree: bool = True, params: Optional[Dict[str, dict]] = None,
                    representation: str = "XY", random_state: int = 0,
                    progress: Optional[Callable] = None, cancel=None,
                    ks: Sequence[int] = (1, 3, 5)) -> Experiment:
    """Raw features against DEFRAG features, paired (module docstring).

    Parameters
    ----------
    {ml_experiment_data}
    d0s : sequence of int, default=DEFAULT_D0S
        The d0 values (largest leaf cluster; d0 = 1 or a d0 >= d keeps every feature).
    classifiers : sequence of str, default=("ktxmlc", "ova")
        Any of "ktxmlc", "ova".
    per_tree : bool, default=True
        Also the DEFRAG paper's ensemble (one DEFRAG realisation and one KTXMLC tree per
        tree, KTXMLC settings of ``params["ktxmlc"]``) at every d0.
    params : dict, optional
        Classifier parameters per kind ({"ktxmlc": {...}, "ova": {...}}); the same
        ones on raw and DEFRAG features.
    representation, random_state : str, int
        DEFRAG's (the classifiers keep their own seed).
    {experiment_progress_status}

    Returns
    -------
    Experiment
        Kind "defrag_tradeoff", with table ``"rows"`` (one row per classifier and d0;
        ``d0`` None for raw features) and, in ``summary``, per classifier the chosen d0
        (the largest one keeping >= :data:`KEEP_P1` of the raw P@1), its share of the raw
        P@1 and its training speed-up.

    Raises
    ------
    ValueError
        For an unknown classifier or a d0 that is not a positive integer.
    """
    t0 = time.perf_counter()
    d0s = sorted({int(d) for d in d0s})
    kinds = [k for k in classifiers]
    for k in kinds:
        if k not in ("ktxmlc", "ova"):
            raise ValueError(f"classifiers must be 'ktxmlc' or 'ova', got {k!r}")
    if not d0s or min(d0s) < 1:
        raise ValueError(f"d0s must be positive integers, got {list(d0s)}")
    params = params or {}
    exp = Experiment("defrag_tradeoff", "Raw features vs DEFRAG, paired",
                     {"d0s": d0s, "classifiers": kinds, "per_tree": bool(per_tree),
                      "params": params, "representation": representation,
                      "random_state": int(random_state), "ks": list(ks)},
                     split_id=split.split_id)
    defrag = {"representation": representation, "random_state": int(random_state)}
    plan: List[tuple] = []              # (kind, d0 or None, spec)
    for kind in kinds:
        plan.append((kind, None, {"classifier": _classifier_params(kind, params.get(kind))}))
    for d0 in d0s:
        for kind in kinds:
            plan.append((kind, d0, {"defrag": dict(defrag, d0=d0),
                                    "classifier": _classifier_params(kind, params.get(kind))}))
    if per_tree:
        kt = _classifier_params("ktxmlc", params.get("ktxmlc"))
        kt["random_state"] = int(random_state)     # members share the seed (DefragKTXMLC)
        for d0 in d0s:
            plan.append(("per_tree", d0, {"defrag": dict(defrag, d0=d0, per_tree=True),
                                          "classifier": kt}))

    def base_for(i):
        kind, d0, _ = plan[i]
        if d0 is None or kind == "per_tree":
            return None
        # reuse the DEFRAG of the first classifier at this d0
        def pick(done):
            for (k, d, _), r in zip(plan, done):
                if d == d0 and k != "per_tree" and r.status == "done":
                    return r
            return None
        return pick

    warm_kernels(data, split, [p[2] for p in plan])   # before any clock
    runs, cancelled = run_specs(data, split, [p[2] for p in plan],
                                bases=[base_for(i) for i in range(len(plan))],
                                progress=progress, cancel=cancel)
    exp.runs = runs
    defrag_s, defrag_cpu = {}, {}
    for (kind, d0, _), r in zip(plan, runs):
        if d0 is not None and kind != "per_tree" and "defrag" not in r.reused:
            defrag_s.setdefault(d0, float(r.timings.get("defrag_s", 0.0)))
            defrag_cpu.setdefault(d0, float(r.timings.get("defrag_cpu_s", math.nan)))
    rows = []
    for (kind, d0, _), r in zip(plan, runs):
        rows.append(_row(r, ks, {"classifier": CLASSIFIER_TITLES[kind], "kind": kind,
                                 "d0": d0}, defrag_s.get(d0), defrag_cpu.get(d0)))
    _relative(rows, time_rows(data, split, runs, rows, cancel))
    exp.tables["rows"] = rows
    exp.summary, exp.verdict = _tradeoff_summary(rows, kinds, per_tree)
    exp.status = "cancelled" if cancelled else "done"
    if cancelled:
        exp.message = f"cancelled after {len(runs)} of {len(plan)} runs"
    exp.seconds = time.perf_counter() - t0
    return exp


#: training rows of the slice :func:`warm_kernels` fits the specs on
WARM_ROWS = 300


def warm_kernels(data=None, split=None, specs: Sequence[dict] = ()) -> None:
    """Compile (or load from numba's cache) the kernels the timed fits will run, so that no
    timed fit pays for compilation (a cold first fit was counted as training and made a
    "38× faster" out of nothing; issue 30): the DEFRAG and KTXMLC modules' own warm-ups,
    then every spec of ``specs`` fitted once, untimed, on the first :data:`WARM_ROWS`
    training rows of ``data`` -- the same dtypes and code paths as the real fits (the tiny
    problems of the warm-ups alone left Bibtex's first KTXMLC fit 2.4× slower in CPU
    seconds in a process with an empty numba cache, benchmarks/results/triage_claims.md).
    A spec that cannot be fitted on so few rows is skipped (its fit compiles then).

    Parameters
    ----------
    data : MultiLabelData, optional
        The dataset the timed fits use.
    split : Split, optional
        Its split (the training rows).
    specs : sequence of dict, default=()
        Classifier specs (canonical or not) to fit once on the slice.
    """
    from featagg_core.agglomeration import defrag
    from featagg_core.runs.spec import canonical_spec
    from featagg_core.xmlc import ktxmlc
    defrag.warmup()
    ktxmlc.warmup()
    if data is None or split is None or not specs:
        return
    first_rows = SimpleNamespace(train=np.asarray(split.train)[:WARM_ROWS])
    seen = set()
    for spec in specs:
        try:
            spec = canonical_spec(spec)
            key = repr(sorted((k, repr(v)) for k, v in spec.items()))
            if key in seen:
                continue
            seen.add(key)
            _fit_callable(data, first_rows, spec)()
        except Exception:  # noqa: BLE001 - best effort: the real fit compiles what is left
            continue


def _fit_callable(data, split, spec: dict) -> Callable[[], Any]:
    """One fit of the training part of a classifier spec (DEFRAG included, its transform
    too; no re-ranker, no scoring): what a row's training time measures."""
    from featagg_core.runs.steps import fit_classifier, fit_defrag, fit_per_tree
    X, Y = data.X[split.train], data.Y[split.train]
    if "defrag" in spec and spec["defrag"].get("per_tree"):
        return lambda: fit_per_tree(X, Y, spec["defrag"], spec["classifier"])
    if "defrag" in spec:
        def fit():
            model = fit_defrag(X, Y, spec["defrag"])
            fit_classifier(model.transform(X), Y, spec["classifier"])
        return fit
    return lambda: fit_classifier(X, Y, spec["classifier"])


def _same_model(a: dict, b: dict) -> bool:
    """Two finished rows of the same features whose every test metric, feature count and
    model size agree: the same model (KTXMLC that kept one flat tree is one-vs-all)."""
    if a.get("status") != "done" or b.get("status") != "done" or a["d0"] != b["d0"]:
        return False
    keys = [k for k in a if "@" in k and "kept" not in k]
    return bool(keys) and all(a.get(k) == b.get(k) for k in keys + ["features",
                                                                     "model_bytes"])


@fill_doc
def time_rows(data, split, runs, rows: List[dict], cancel=None) -> Dict[int, Any]:
    """Honest training times of the finished rows (:mod:`featagg_core.utils.timing`): a row
    whose fit took at least ``MIN_TOTAL_S`` keeps its one timing; a faster one is fitted
    again (the run's own fit was the warm one) until its repeats cover ``MIN_TOTAL_S``.
    A KTXMLC row that is the same model as the one-vs-all row at the same d0 takes that
    row's timing (one model, one time). Sets ``train_s`` (median wall seconds),
    ``train_cpu_s`` (median CPU seconds), ``train_min_s``, ``train_max_s``,
    ``train_cpu_min_s``, ``train_cpu_max_s``, ``train_total_s`` (the repeats' wall sum)
    and ``fits timed`` on every timed row.

    Parameters
    ----------
    {ml_experiment_data}
    runs : list of Run
        The rows' runs, in the same order.
    rows : list of dict
        :func:`_row`'s rows (changed in place).
    cancel : threading.Event-like, optional
        No more repeats once set.

    Returns
    -------
    dict of int to Timing
        The timing of every timed row, by its index.
    """
    from featagg_core.utils.timing import MIN_TOTAL_S, time_fit
    out: Dict[int, Any] = {}
    for i, (run, r) in enumerate(zip(runs, rows)):
        if r.get("status") != "done":
            continue
        twin = next((j for j, o in enumerate(rows) if j in out and o["kind"] == "ova"
                     and r["kind"] == "ktxmlc" and _same_model(r, o)), None)
        if twin is not None:
            out[i] = out[twin]
            r["same model as"] = rows[twin]["classifier"]
        elif r["train_s"] >= MIN_TOTAL_S or (cancel is not None and cancel.is_set()):
            out[i] = time_fit(lambda: None, first=(r["train_s"], r.get("train_cpu_s")),
                              max_repeats=1)
        else:
            out[i] = time_fit(_fit_callable(data, split, run.spec),
                              first=(r["train_s"], r.get("train_cpu_s")))
        t = out[i]
        r.update({"train_s": t.seconds, "train_cpu_s": t.cpu_seconds,
                  "train_min_s": min(t.wall), "train_max_s": max(t.wall),
                  "train_total_s": t.total, "fits timed": t.repeats,
                  "train_cpu_min_s": min(t.cpu) if t.cpu else math.nan,
                  "train_cpu_max_s": max(t.cpu) if t.cpu else math.nan})
    for i, r in enumerate(rows):          # an ova row after its KTXMLC twin
        if r.get("status") == "done" and r["kind"] == "ktxmlc" and "same model as" not in r:
            o = next((o for o in rows if o["kind"] == "ova" and _same_model(r, o)), None)
            if o is not None:
                r["same model as"] = o["classifier"]
    return out


def _relative(rows: List[dict], timings: Optional[Dict[int, Any]] = None) -> None:
    """Adds ``P@1 kept`` (share of the raw P@1 of the same classifier) and, from the honest
    timings (:func:`time_rows`), ``speed`` (the claim: "3.5× faster", "no measurable
    difference", "too fast to time") and ``speed-up`` (raw train time / this train time,
    NaN unless a speed-up or slow-down is measurable) to every finished row."""
    from featagg_core.utils.timing import Timing, compare
    timings = timings or {}
    raw = {}
    for i, r in enumerate(rows):
        if r["d0"] is None and r["status"] == "done":
            raw[r["kind"]] = i
    for i, r in enumerate(rows):
        j = raw.get("ktxmlc" if r["kind"] == "per_tree" else r["kind"])
        if j is None or r["status"] != "done":
            continue
        ref = rows[j]
        r["P@1 kept"] = r["P@1"] / ref["P@1"] if ref["P@1"] > 0 else math.nan
        if i == j:
            continue
        claim = compare(timings.get(j, Timing((ref["train_s"],))),
                        timings.get(i, Timing((r["train_s"],))))
        r["speed-up"] = claim.ratio
        r["speed basis"] = claim.basis
        r["speed"] = {"same": "no measurable difference", "too_fast": "too fast to time",
                      "faster": f"{claim.ratio:.1f}× faster",
                      "slower": f"{1 / claim.ratio:.1f}× slower"}[claim.kind]


def _secs(x: float) -> str:
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if abs(100 * x - round(100 * x)) < 0.05 or x >= 0.995 \
        else f"{100 * x:.1f} %"


def speed_phrase(before: dict, after: dict, verb: str = "trains") -> str:
    """How ``after`` trains against ``before`` (two finished rows timed by
    :func:`time_rows`), as honest as the timings allow.

    Parameters
    ----------
    before, after : dict
        The rows (``train_s`` and, on ``after``, ``speed`` and ``speed-up`` from
        :func:`_relative`).
    verb : str, default="trains"
        The verb of the phrase.

    Returns
    -------
    str
        "trains 3.5× faster (2.10 s → 0.60 s)", "trains with no measurable difference
        (0.31 s vs 0.29 s)" or "trains too fast to time (…)".
    """
    from featagg_core.utils.timing import seconds_text
    sp = after.get("speed", "")
    if after.get("speed basis") == "CPU":
        b = "CPU " + seconds_text(before["train_cpu_s"])
        a = seconds_text(after["train_cpu_s"])
    else:
        b, a = seconds_text(before["train_s"]), seconds_text(after["train_s"])
    if sp == "too fast to time":
        return f"{verb} too fast to time (the repeated fits add up to less than 0.2 s)"
    if sp.endswith("faster") or sp.endswith("slower"):
        return f"{verb} {sp} ({b} → {a})"
    return f"{verb} with no measurable difference ({b} vs {a})"


def _tradeoff_summary(rows, kinds, per_tree):
    summary: Dict[str, Any] = {}
    verdict: List[str] = []
    same = [r for r in rows if r.get("same model as")]
    flat = "ktxmlc" in kinds and "ova" in kinds and same and all(
        r.get("same model as") for r in rows if r["kind"] == "ktxmlc" and r["status"] == "done")
    if flat:
        verdict.append("KTXMLC kept one flat tree on this dataset (the beam reaches every "
                       "leaf): it is the one-vs-all model on the same features, so its runs "
                       "are the One-vs-all runs, reported once, as One-vs-all.")
    for kind in list(kinds) + (["per_tree"] if per_tree else []):
        mine = [r for r in rows if r["kind"] == kind and r["d0"] is not None
                and r["status"] == "done" and "P@1 kept" in r]
        raw = next((r for r in rows if r["kind"] == ("ktxmlc" if kind == "per_tree" else kind)
                    and r["d0"] is None and r["status"] == "done"), None)
        if raw is None or not mine:
            continue
        title = CLASSIFIER_TITLES[kind]
        keep = [r for r in mine if r["P@1 kept"] >= KEEP_P1]
        best = max(keep, key=lambda r: r["d0"]) if keep else \
            max(mine, key=lambda r: r["P@1 kept"])
        summary[kind] = {"d0": best["d0"], "P@1 kept": best["P@1 kept"],
                         "speed-up": best.get("speed-up", math.nan),
                         "speed": best.get("speed", ""), "features": best["features"],
                         "raw features": raw["features"], "meets": bool(keep)}
        if flat and kind == "ktxmlc":
            summary[kind]["same model as"] = "One-vs-all"
            continue
        if keep:
            verdict.append(
                f"{title}: d0 = {best['d0']} keeps {_pct(best['P@1 kept'])} of P@1 "
                f"({100 * raw['P@1']:.1f} → {100 * best['P@1']:.1f} %) and "
                f"{speed_phrase(raw, best)} ({raw['features']:,} → {best['features']:,} "
                "features).")
        else:
            verdict.append(
                f"{title}: no d0 keeps {_pct(KEEP_P1)} of the raw P@1; the closest is d0 = "
                f"{best['d0']} with {_pct(best['P@1 kept'])} ({100 * raw['P@1']:.1f} → "
                f"{100 * best['P@1']:.1f} %), {speed_phrase(raw, best, 'training')} "
                f"({raw['features']:,} → {best['features']:,} features).")
    return summary, verdict


# ----------------------------------------------------------------------------- sweeps
@fill_doc
def ktxmlc_sweep(data, split, param: str = "n_clusters",
                 values: Optional[Sequence[int]] = None, *, spec: Optional[dict] = None,
                 with_elbow: bool = True, progress: Optional[Callable] = None, cancel=None,
                 ks: Sequence[int] = (1, 3, 5)) -> Experiment:
    """P@k, train and predict time against ``param`` ("n_clusters" = K or "n_trees" = T).

    K values the labels cannot fill (K >= L) are dropped. With ``with_elbow`` (K only),
    the K elbow of the training rows (:func:`featagg_core.runs.evaluation.elbow` on the same
    grid) goes in ``summary["elbow"]``.

    Parameters
    ----------
    {ml_experiment_data}
    param : {"n_clusters", "n_trees"}, default="n_clusters"
        What the sweep varies.
    values : sequence of int, optional
        Its values (default :data:`DEFAULT_KS` / :data:`DEFAULT_TREES`).
    spec : dict, optional
        The classifier spec the sweep varies (default KTXMLC's defaults; may have a
        "defrag" step).
    with_elbow : bool, default=True
        Also compute the K elbow.
    {experiment_progress_status}

    Returns
    -------
    Experiment
        Table ``"rows"``: one row per value.

    Raises
    ------
    ValueError
        For an unknown ``param`` or a spec without a KTXMLC classifier.
    """
    from featagg_core.runs.spec import canonical_spec
    from featagg_core.runs.evaluation import elbow
    if param not in ("n_clusters", "n_trees"):
        raise ValueError(f"param must be 'n_clusters' (K) or 'n_trees' (T), got {param!r}")
    t0 = time.perf_counter()
    base = canonical_spec(spec or {"classifier": {"kind": "ktxmlc"}})
    if base.get("classifier", {}).get("kind") != "ktxmlc":
        raise ValueError("spec: the sweep needs a KTXMLC classifier step")
    if values is None:
        values = DEFAULT_KS if param == "n_clusters" else DEFAULT_TREES
    values = sorted({int(v) for v in values})
    L = int(data.Y.shape[1])
    if param == "n_clusters":
        values = [v for v in values if 2 <= v < L] or [2]
    else:
        values = [v for v in values if v >= 1]
    title = "KTXMLC: K (children per node)" if param == "n_clusters" else \
        "KTXMLC: T (number of trees)"
    exp = Experiment("ktxmlc_sweep", title, {"param": param, "values": values,
                                             "spec": base, "ks": list(ks)},
                     split_id=split.split_id)
    with_elbow = with_elbow and param == "n_clusters"
    specs = [dict(base, classifier=dict(base["classifier"], **{param: v})) for v in values]
    # one DEFRAG for every value (the per-tree ensemble has its own per tree)
    reuse = "defrag" in base and not base["defrag"].get("per_tree")
    bases = [None] + [(lambda done: next((r for r in done if r.status == "done"), None))
                      if reuse else None for _ in specs[1:]]
    runs, cancelled = run_specs(data, split, specs, bases=bases,
                                progress=_progress_split(progress, 0.0, 0.9 if with_elbow
                                                         else 1.0), cancel=cancel)
    exp.runs = runs
    defrag_s = float(runs[0].timings.get("defrag_s", 0.0)) if runs else None
    rows = [_row(r, ks, {param: v}, defrag_s) for v, r in zip(values, runs)]
    exp.tables["rows"] = rows
    done = [r for r in rows if r["status"] == "done"]
    if done:
        best = max(done, key=lambda r: (round(r["P@1"], 12), -r["train_s"]))
        exp.summary["best"] = {param: best[param], "P@1": best["P@1"],
                               "train_s": best["train_s"]}
        sym = "K" if param == "n_clusters" else "T"
        exp.verdict.append(f"Best P@1 at {sym} = {best[param]}: {100 * best['P@1']:.1f} % "
                           f"(train {best['train_s']:.1f} s); the range over {sym} = "
                           f"{done[0][param]}..{done[-1][param]} is "
                           f"{100 * min(r['P@1'] for r in done):.1f}–"
                           f"{100 * max(r['P@1'] for r in done):.1f} %.")
    if with_elbow and not cancelled:
        if progress is not None:
            progress(0.9, "K elbow of the training rows' label vectors")
        try:
            e = elbow(data, split, ks=values,
                      random_state=int(base["classifier"]["random_state"]))
            exp.tables["elbow"] = [{"K": int(k), "wcss": float(w)}
                                   for k, w in zip(e.ks, e.wcss)]
            exp.summary["elbow"] = int(e.elbow)
            exp.verdict.append(f"The elbow of the root's within-cluster sum of squares is at "
                               f"K = {int(e.elbow)}.")
        except ValueError as exc:
            exp.message = f"no elbow: {exc}"
    exp.status = "cancelled" if cancelled else "done"
    if cancelled:
        exp.message = f"cancelled after {len(runs)} of {len(specs)} runs"
    exp.seconds = time.perf_counter() - t0
    if progress is not None and not cancelled:
        progress(1.0, "done")
    return exp
