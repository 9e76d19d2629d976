"""Runs: one fit of a spec on a split, from the plan to the scored pipeline.

::

    data ──make_split──▶ Split ──run_pipeline(data, split, spec)──▶ Run(pipeline, metrics)
                                       │ every fitted step sees split.train rows only
                                       └─ evaluate(pipeline, data, split, rows="valid"/"test")

>>> from featagg_core.data.synthetic import make_powerlaw_multilabel
>>> from featagg_core.runs.split import make_split
>>> data = make_powerlaw_multilabel(300, 120, 20, random_state=0)
>>> split = make_split(data, test_size=0.2)
>>> run = run_pipeline(data, split, {"defrag": {"d0": 8}, "classifier": {"n_trees": 1}})
>>> run.status, run.name
('done', 'KTXMLC K=2 T=1 · DEFRAG d0=8')
>>> sorted(run.metrics)
['test']

:class:`Run` (the record: spec, split, status, timings, metrics, fitted pipeline),
:func:`plan_run` (a queued run: the spec checked and named) and :func:`run_pipeline` (fit
each step of the run's kind through :mod:`featagg_core.runs.steps`, one fitter per kind in
``_FITTERS``, then score the held-out rows with :mod:`featagg_core.runs.evaluation`). The
public face is :mod:`featagg_core.experiment` (docs/RUN_MODEL.md).

What each fitted step sees (all of them: training rows only, ``split.train``; validation
and test rows are held out): DEFRAG (its XY representation uses the training labels),
KTXMLC / one-vs-all, REFRAG's prototypes and inverse propensities, FIAT's C^F, the
feature-clustering baselines, the vocabulary counts, and every graph feature selection.

Graphs are split *inductively*: BMGUFS and the baselines are fitted on the subgraph induced
by the training nodes (their features, the edges among them, their classes for the number
of blocks) and judged by k-means on the held-out nodes' selected features. The BMGUFS paper
(and the transductive protocol of the unsupervised feature-selection literature) fits and
judges on all nodes; we hold nodes out so that no score is computed on nodes the selection
saw — the numbers are therefore not directly comparable with the paper's tables.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from featagg_core.runs.evaluation import _evaluate
from featagg_core.runs.pipeline import Pipeline
from featagg_core.runs.spec import (
    canonical_spec,
    check_spec_fits,
    fitted_run_name,
    run_name,
    spec_json,
    spec_kind,
    sub_spec,
)
from featagg_core.runs.split import Split, take_rows
from featagg_core.runs.steps import (
    fit_classifier,
    fit_defrag,
    fit_feature_clustering,
    fit_fiat,
    fit_per_tree,
    fit_refrag,
    fit_selector,
    fit_vocabulary,
)
from featagg_core.utils.cancel import Cancelled, cancelling_progress, check_cancel
from featagg_core.utils.docstrings import fill_doc

#: a failed run's traceback goes to this logger (the public module's name, as documented)
_log = logging.getLogger("featagg_core.experiment")

STATUSES = ("queued", "running", "done", "cancelled", "failed")
#: the cut-offs every classifier run is scored at
KS = (1, 3, 5)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def jsonable(value):
    """``value`` with dict keys as strings, tuples as lists, numpy scalars as Python ones and
    non-finite floats as None: what the run and experiment records are written with.

    Parameters
    ----------
    value : object
        Nested dicts, lists and tuples of plain or numpy values.

    Returns
    -------
    object
        The same structure, JSON-able.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ----------------------------------------------------------------------------- Run
@dataclass(eq=False)
class Run:
    """One fit of a spec on a split, its status, timings, metrics and fitted pipeline.

    ``status`` is "queued" | "running" | "done" | "cancelled" | "failed" (``message`` says
    why); ``timings`` are seconds per step (``defrag_s``, ``classifier_s``, ``rerank_s``,
    ``impute_s``, ``feature_clustering_s``, ``selection_s``, ``vocabulary_s``,
    ``predict_s``, ``total_s``), the CPU seconds of each fitted step (``defrag_cpu_s`` …,
    ``time.process_time``: the honest-timing claims compare those,
    :mod:`featagg_core.utils.timing`) and ``predict_ms_per_point``; ``metrics`` is
    ``{"valid": {...}, "test": {...}}`` (``valid`` only when the split has validation rows);
    ``model_sizes`` bytes per step and ``total``; ``reused`` the steps taken from ``base``.
    """
    run_id: str
    name: str
    kind: str
    dataset_fingerprint: str
    dataset_name: str
    split_id: str
    split: Split
    spec: dict
    status: str = "queued"
    message: str = ""
    timings: Dict[str, float] = field(default_factory=dict)
    metrics: Dict[str, Dict[str, float]] = field(default_factory=dict)
    model_sizes: Dict[str, int] = field(default_factory=dict)
    pipeline: Optional[Pipeline] = None
    created: str = field(default_factory=_now)
    reused: List[str] = field(default_factory=list)
    base_run_id: Optional[str] = None

    def __repr__(self):
        return f"Run({self.name!r}, {self.status}, split={self.split_id}, id={self.run_id})"

    @property
    def spec_key(self) -> str:
        """hash(dataset fingerprint, split_id, canonical spec): equal keys mean an identical
        fit (the dashboard may share such fits across sessions)."""
        text = f"{self.dataset_fingerprint}|{self.split_id}|{spec_json(self.spec)}"
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def to_record(self) -> dict:
        """Everything but the pipeline, JSON-able.

        For Compare's table, Export's run table and the triage JSON.

        Returns
        -------
        dict
            The run's fields (ids, name, kind, split, spec, spec_key, status, message,
            timings, metrics, model sizes, reused steps).
        """
        return jsonable({
            "run_id": self.run_id, "name": self.name, "kind": self.kind,
            "dataset_fingerprint": self.dataset_fingerprint,
            "dataset_name": self.dataset_name, "split_id": self.split_id,
            "split": self.split.to_record(), "spec": self.spec, "spec_key": self.spec_key,
            "status": self.status, "message": self.message, "timings": dict(self.timings),
            "metrics": self.metrics, "model_sizes": dict(self.model_sizes),
            "created": self.created, "reused": list(self.reused),
            "base_run_id": self.base_run_id})


@fill_doc
def plan_run(data, split: Split, spec: dict, *, fingerprint: Optional[str] = None) -> Run:
    """A "queued" :class:`Run` of ``spec`` on ``split``.

    The spec checked and made canonical, its name and ``spec_key`` known, nothing fitted.
    :func:`run_pipeline` starts from this.

    Parameters
    ----------
    {data_any}
    split : Split
        A split of ``data`` (:func:`make_split`).
    spec : dict
        The run spec (docs/RUN_MODEL.md).
    fingerprint : str, optional
        The fingerprint to record for ``data`` (default ``data.fingerprint``).

    Returns
    -------
    Run
        With ``status="queued"``.

    Raises
    ------
    ValueError
        Naming the key when the spec is bad or does not fit the data, or for a split of
        another dataset.
    """
    spec = canonical_spec(spec)
    fp = data.fingerprint if fingerprint is None else fingerprint
    if not isinstance(split, Split):
        raise ValueError(f"split must be a Split from make_split, got {type(split).__name__}")
    if split.dataset_fingerprint != fp:
        raise ValueError(f"split {split.split_id} was made for another dataset; make a split "
                         "of this dataset with make_split(data)")
    check_spec_fits(spec, data)
    return Run(run_id=uuid.uuid4().hex, name=run_name(spec), kind=spec_kind(spec),
               dataset_fingerprint=fp, dataset_name=str(getattr(data, "name", "") or ""),
               split_id=split.split_id, split=split, spec=spec)


# ----------------------------------------------------------------------------- fitting
class _Fit:
    """State of one run while its steps are fitted: progress ranges, timings, reuse."""

    def __init__(self, data, split, run: Run, base: Optional[Pipeline], progress, cancel,
                 scheduler=None):
        self.data, self.split, self.run, self.base = data, split, run, base
        self.progress, self.cancel = progress, cancel
        self.scheduler = scheduler  # DEFRAG / KTXMLC fitted by their Dask twins when set
        self.pipe = Pipeline(spec=run.spec, split_id=split.split_id,
                             dataset_fingerprint=run.dataset_fingerprint)
        self.pipe.split_settings = {"how": split.how, "test_size": split.test_size,
                                    "valid_size": split.valid_size,
                                    "random_state": split.random_state}

    def report(self, lo: float, hi: float) -> Callable[[float, str], None]:
        return cancelling_progress(self.progress, self.cancel, lo, hi)

    def step(self, name: str, timing: str, fit: Callable[[], Any]):
        """The fitted step ``name``: taken from ``base`` when its sub-spec is equal, else
        fitted by ``fit()`` (timed under ``timing``)."""
        check_cancel(self.cancel)
        if self.base is not None and getattr(self.base, name, None) is not None \
                and sub_spec(self.base.spec, name) == sub_spec(self.run.spec, name):
            self.run.reused.append(name)
            self.run.timings.setdefault(timing, 0.0)
            return getattr(self.base, name)
        t0, c0 = time.perf_counter(), time.process_time()
        obj = fit()
        self.run.timings[timing] = self.run.timings.get(timing, 0.0) + time.perf_counter() - t0
        cpu = timing[:-2] + "_cpu_s"          # CPU seconds of the process, every thread
        self.run.timings[cpu] = self.run.timings.get(cpu, 0.0) + time.process_time() - c0
        return obj


def _fit_classifier_run(f: _Fit) -> Pipeline:
    spec, pipe, split = f.run.spec, f.pipe, f.split
    X, Y = f.data.X[split.train], f.data.Y[split.train]
    pipe.n_features_in_, pipe.n_labels_ = int(X.shape[1]), int(Y.shape[1])
    if "defrag" in spec and spec["defrag"]["per_tree"]:
        pipe.classifier = f.step("classifier", "classifier_s", lambda: fit_per_tree(
            X, Y, spec["defrag"], spec["classifier"], f.report(0.0, 0.75)))
        pipe.defrag = pipe.classifier.defrags_[0]
    else:
        if "defrag" in spec:
            pipe.defrag = f.step("defrag", "defrag_s", lambda: fit_defrag(
                X, Y, spec["defrag"], f.report(0.0, 0.15), scheduler=f.scheduler))
        check_cancel(f.cancel)
        pipe.classifier = f.step("classifier", "classifier_s", lambda: fit_classifier(
            pipe._features(X), Y, spec["classifier"], f.report(0.15, 0.75),
            scheduler=f.scheduler))
    own: Dict[str, Any] = {}           # own clusterings of REFRAG / FIAT, fitted once each

    def clustering(sub: dict, lo: float, hi: float):
        if "defrag" not in sub:
            return pipe.defrag
        key = spec_json(sub["defrag"])
        if key not in own:
            own[key] = fit_defrag(X, Y, sub["defrag"], f.report(lo, hi), scheduler=f.scheduler)
        return own[key]

    if "rerank" in spec:
        def rerank():
            model = fit_refrag(X, Y, spec["rerank"], clustering(spec["rerank"], 0.75, 0.8))
            if spec["rerank"]["tune"]:             # alpha, gamma, beta on validation rows
                from featagg_core.runs.refrag_tuning import tune_reranker
                model, note, _ = tune_reranker(model, f.data, f.split, spec, pipe,
                                               clustering(spec["rerank"], 0.75, 0.8),
                                               f.cancel, f.report(0.8, 0.84))
                f.run.message = note
            return model

        pipe.reranker = f.step("reranker", "rerank_s", rerank)
        f.report(0.0, 0.84)(1.0, "REFRAG: label prototypes built")
    if "impute" in spec:
        pipe.imputer = f.step("imputer", "impute_s", lambda: fit_fiat(
            X, spec["impute"], clustering(spec["impute"], 0.84, 0.88)))
        f.report(0.0, 0.9)(1.0, "FIAT: imputation operator built")
    return pipe


def _fit_agglomeration_run(f: _Fit) -> Pipeline:
    X, Y = f.data.X[f.split.train], f.data.Y[f.split.train]
    f.pipe.n_features_in_ = int(X.shape[1])
    f.pipe.defrag = f.step("defrag", "defrag_s", lambda: fit_defrag(
        X, Y, f.run.spec["defrag"], f.report(0.0, 0.85), scheduler=f.scheduler))
    return f.pipe


def _fit_feature_clustering_run(f: _Fit) -> Pipeline:
    X, Y = f.data.X[f.split.train], f.data.Y[f.split.train]
    f.pipe.n_features_in_ = int(X.shape[1])
    f.pipe.feature_clustering = f.step("feature_clustering", "feature_clustering_s",
                                       lambda: fit_feature_clustering(
                                           X, Y, f.run.spec["feature_clustering"],
                                           f.report(0.0, 0.85)))
    return f.pipe


def _fit_feature_selection_run(f: _Fit) -> Pipeline:
    train = take_rows(f.data, f.split, "train")       # the training nodes' induced subgraph
    f.pipe.n_features_in_ = int(train.X.shape[1])
    held: Dict[str, Any] = {}

    def fit():
        model, selected, note = fit_selector(train.A, train.X, train.y,
                                             f.run.spec["feature_selection"],
                                             f.report(0.0, 0.8))
        held.update(selected=selected, note=note)
        return model

    f.pipe.selector = f.step("selector", "selection_s", fit)
    if "selected" in held:
        f.pipe.selected_ = held["selected"]
        if held["note"]:
            f.run.message = held["note"]
    else:
        f.pipe.selected_ = f.base.selected_
    return f.pipe


def _fit_vocabulary_run(f: _Fit) -> Pipeline:
    train = take_rows(f.data, f.split, "train")
    held: Dict[str, Any] = {}

    def fit():
        cc, cols = fit_vocabulary(train.table, train.labels, f.run.spec["vocabulary"],
                                  f.cancel, f.report(0.0, 0.8))
        held["columns"] = cols
        return cc

    f.pipe.vocabulary = f.step("vocabulary", "vocabulary_s", fit)
    f.pipe.columns_ = held.get("columns", getattr(f.base, "columns_", None))
    return f.pipe


_FITTERS = {"classifier": _fit_classifier_run, "agglomeration": _fit_agglomeration_run,
            "feature_clustering": _fit_feature_clustering_run,
            "feature_selection": _fit_feature_selection_run,
            "vocabulary": _fit_vocabulary_run}


def _base_pipeline(base, split: Split, fingerprint: str) -> Optional[Pipeline]:
    if base is None:
        return None
    pipe = base.pipeline if isinstance(base, Run) else base
    if not isinstance(pipe, Pipeline):
        raise ValueError(f"base must be a Run or a Pipeline, got {type(base).__name__}"
                         + (f" (run status {base.status!r})" if isinstance(base, Run) else ""))
    if pipe.dataset_fingerprint != fingerprint:
        raise ValueError("base: its steps were fitted on another dataset; refit them")
    if pipe.split_id != split.split_id:
        raise ValueError(f"base: its steps were fitted on split {pipe.split_id}, this run's "
                         f"split is {split.split_id}; reusing them could score rows they "
                         "were trained on, so refit instead")
    return pipe


def run_pipeline(data, split: Split, spec: dict, progress: Optional[Callable] = None,
                 cancel=None, base=None, *, ks=KS, scheduler=None) -> Run:
    """Fit ``spec`` on the training rows of ``split`` and score it: a finished :class:`Run`.

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
    split : Split of ``data`` (:func:`make_split`)
    spec : dict, see docs/RUN_MODEL.md (made canonical with :func:`canonical_spec`)
    progress : callable(fraction, message), optional
    cancel : ``threading.Event``-like (``is_set()``), optional. Checked between steps and
        at every progress callback of every estimator; once set the run returns with
        ``status="cancelled"`` (no exception, no pipeline).
    base : Run or Pipeline, optional. Its fitted steps are reused when their sub-spec is
        equal (e.g. adding REFRAG to a trained classifier); a base fitted on another split
        or dataset is refused (ValueError). Other steps are refitted.
    ks : cut-offs of the ranking metrics (keyword only; default 1, 3, 5).
    scheduler : None (fit here), ``"serial"``, a Dask scheduler address or a
        ``dask.distributed.Client`` (keyword only): DEFRAG and KTXMLC steps are then fitted
        by their Dask twins (:mod:`featagg_core.distributed`), which give the same models,
        so the run (and its ``spec_key``) is the same; other steps are fitted here.

    Returns
    -------
    Run
        ``status`` "done" with metrics and the fitted pipeline, or "cancelled" / "failed"
        (the reason in ``message``).

    Raises
    ------
    ValueError
        Before anything is fitted: a bad spec (naming the key), a spec that does not fit
        the data, a split of another dataset, an unusable ``base``. A failure while
        fitting gives ``status="failed"`` and the reason in ``message`` instead (the
        traceback goes to the ``featagg_core.experiment`` logger).
    """
    fp = data.fingerprint
    run = plan_run(data, split, spec, fingerprint=fp)
    base_pipe = _base_pipeline(base, split, fp)
    run.base_run_id = base.run_id if isinstance(base, Run) else None
    run.status = "running"
    t_start = time.perf_counter()
    fit = _Fit(data, split, run, base_pipe, progress, cancel, scheduler)
    try:
        pipe = _FITTERS[run.kind](fit)
        check_cancel(cancel)
        fit.report(0.0, 0.9)(1.0, "scoring the held-out rows")
        if split.valid.size:
            run.metrics["valid"], _ = _evaluate(pipe, data, split, "valid", ks,
                                                fingerprint=fp, cancel=cancel)
            check_cancel(cancel)
        run.metrics["test"], seconds = _evaluate(pipe, data, split, "test", ks,
                                                 fingerprint=fp, cancel=cancel)
        check_cancel(cancel)
        run.timings["predict_s"] = seconds
        run.timings["predict_ms_per_point"] = 1e3 * seconds / max(split.test.size, 1)
        run.model_sizes = pipe.model_sizes()
        run.pipeline = pipe
        run.name = fitted_run_name(run.spec, pipe)   # + what the fit chose (one flat tree, k)
        run.status = "done"
    except Cancelled:
        run.status, run.message, run.metrics = "cancelled", "cancelled before it finished", {}
    except Exception as exc:  # noqa: BLE001 - a failed fit is a run outcome, not a crash
        _log.exception("run %s (%s) failed", run.run_id, run.name)
        run.status, run.metrics = "failed", {}
        if isinstance(exc, MemoryError):   # a setting too large for the machine, not a bug
            run.message = ("not enough memory for this run; try a smaller setting or a "
                           "sample of the data")
        else:
            run.message = str(exc) if isinstance(exc, ValueError) else \
                f"{type(exc).__name__}: {exc}"
    run.timings["total_s"] = time.perf_counter() - t_start
    if run.status == "done" and progress is not None:
        progress(1.0, "done")
    return run
