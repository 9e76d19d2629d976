"""Splits, pipelines, runs and evaluation: the one path every number takes (docs/RUN_MODEL.md).

::

    data ──make_split──▶ Split ──run_pipeline(data, split, spec)──▶ Run(pipeline, metrics)
                                       │ every fitted step sees split.train rows only
                                       └─ evaluate(pipeline, data, split, rows="valid"/"test")

A facade (a contract path of the public API): it defines nothing and lists the run model's
names from the modules of :mod:`featagg_core.runs` that define them: :class:`Split`,
:func:`make_split`, :func:`split_rows` (``runs.split``), :func:`canonical_spec`,
:func:`run_name` (``runs.spec``), :class:`Run`, :func:`plan_run`, :func:`run_pipeline`
(``runs.run``), :class:`Pipeline`, :func:`as_pipeline` (``runs.pipeline``), :func:`evaluate`
and the sweeps (``runs.evaluation``), and the papers' experiments, sets of runs on one split
(:class:`Experiment`, ``runs.experiments.base``): :func:`defrag_tradeoff`,
:func:`ktxmlc_sweep` (``runs.experiments.multilabel``), :func:`bmgufs_protocol`,
:func:`bmgufs_heatmap`, :func:`bmgufs_robustness` (``runs.experiments.graph``),
:func:`vocabulary_experiment`, :func:`vocabulary_heldout`, :func:`default_budget`
(``runs.experiments.table``); the triage that runs them within a time budget is
:mod:`featagg_core.triage.battery`.
"""
from featagg_core.runs.evaluation import (
    BUCKET_NAMES,
    DEFAULT_ALPHAS,
    DEFAULT_DS,
    DEFAULT_FRACTIONS,
    SELECTION_BASELINES,
    Predictions,
    bucket_metrics,
    check_applicable,
    elbow,
    erasure_curve,
    evaluate,
    feature_selection_comparison,
    predictions,
    refrag_alpha_curve,
    vocabulary_budget_curve,
    vocabulary_report,
)
from featagg_core.runs.experiments.base import Experiment
from featagg_core.runs.experiments.graph import (
    bmgufs_heatmap,
    bmgufs_protocol,
    bmgufs_robustness,
)
from featagg_core.runs.experiments.multilabel import (
    DEFAULT_D0S,
    DEFAULT_KS,
    DEFAULT_TREES,
    defrag_tradeoff,
    ktxmlc_sweep,
)
from featagg_core.runs.experiments.table import (
    default_budget,
    vocabulary_experiment,
    vocabulary_heldout,
)
from featagg_core.runs.pipeline import Pipeline, as_pipeline
from featagg_core.runs.run import STATUSES, Run, plan_run, run_pipeline
from featagg_core.runs.spec import canonical_spec, run_name, spec_kind
from featagg_core.runs.split import ROWS, Split, make_split, split_rows
from featagg_core.utils.cancel import Cancelled

__all__ = ["Split", "make_split", "split_rows", "ROWS", "canonical_spec", "run_name",
           "spec_kind", "Run", "plan_run", "run_pipeline", "Pipeline", "as_pipeline",
           "evaluate", "check_applicable", "Predictions", "predictions", "bucket_metrics",
           "refrag_alpha_curve", "erasure_curve", "elbow", "feature_selection_comparison",
           "vocabulary_report", "vocabulary_budget_curve", "Cancelled", "BUCKET_NAMES",
           "DEFAULT_ALPHAS", "DEFAULT_FRACTIONS", "DEFAULT_DS", "SELECTION_BASELINES",
           "STATUSES", "Experiment", "defrag_tradeoff", "ktxmlc_sweep", "bmgufs_protocol",
           "bmgufs_heatmap", "bmgufs_robustness", "vocabulary_experiment",
           "vocabulary_heldout", "default_budget", "DEFAULT_D0S", "DEFAULT_KS",
           "DEFAULT_TREES"]
