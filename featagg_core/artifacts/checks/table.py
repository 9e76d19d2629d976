"""The table of declared artifact checks (class name -> check function), assembled from
the family modules: what the loader passes to
:func:`~featagg_core.artifacts.checks.checker.validate_state`.

A class that can be saved (``featagg_core.artifacts.registry.ARTIFACT_CLASS_NAMES``) cannot
be loaded until its family declares its checks here (``tests/test_hostile_inputs.py``
compares the two tables).
"""
from __future__ import annotations

from featagg_core.artifacts.checks import agglomeration, graph, pipeline, vocab, xmlc
from featagg_core.artifacts.checks.checker import CheckTable

#: class name -> check of its state, for every class an artifact (or a Pipeline step) may hold
CHECKS: CheckTable = {**agglomeration.CHECKS, **xmlc.CHECKS, **graph.CHECKS, **vocab.CHECKS,
                      **pipeline.CHECKS}
