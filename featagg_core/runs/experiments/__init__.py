"""The papers' experiments as sets of runs on one split.

``base`` (:class:`Experiment`, the record every experiment returns, and ``run_specs``, its
runs fitted in turn), ``multilabel`` (DEFRAG's trade-off, KTXMLC's sweeps), ``graph``
(BMGUFS's protocol, heat map and robustness), ``table`` (vocabulary compression).
"""
