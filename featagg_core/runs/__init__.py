"""The run model: the one path every number takes (docs/RUN_MODEL.md).

``split`` (train / validation / test rows), ``spec`` (checked, canonical run specs and their
names), ``steps`` (fit one step on the training rows, here or on a cluster), ``pipeline``
(the fitted pipeline of a run), ``run`` (:class:`Run`, ``plan_run``, ``run_pipeline``: a spec
fitted on a split and scored), ``evaluation`` (the one place that scores anything),
``estimate`` (how long a run will take, and a baseline's sampling plan) and ``calibration``
(this machine's measured speed), ``refrag_tuning`` (REFRAG's knobs chosen on validation
rows), ``experiments/`` (the papers' experiments as sets of runs). The public face is
:mod:`featagg_core.experiment`.
"""
