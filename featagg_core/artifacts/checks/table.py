"""The table of declared artifact checks (class name -> check function), assembled from
the family modules, and :func:`validate_state`, the loader's one entry point.

A class that can be saved (``featagg_core.artifacts.registry.ARTIFACT_CLASS_NAMES``) cannot
be loaded until its family declares its checks here (``tests/test_hostile_inputs.py``
compares the two tables).
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from featagg_core.artifacts.checks import agglomeration, graph, pipeline, vocab, xmlc
from featagg_core.artifacts.checks.checker import CheckTable, check_state

#: class name -> check of its state, for every class an artifact (or a Pipeline step) may hold
CHECKS: CheckTable = {**agglomeration.CHECKS, **xmlc.CHECKS, **graph.CHECKS, **vocab.CHECKS,
                      **pipeline.CHECKS}


def validate_state(cls_name: str, params: dict, meta: dict, arrays: Dict[str, np.ndarray],
                   where: str, error) -> None:
    """Raise ``error`` (ArtifactError) unless (params, meta, arrays) is a consistent state of
    class ``cls_name`` that every method of the rebuilt estimator can use safely.

    Parameters
    ----------
    cls_name : str
        The class the manifest names.
    params, meta : dict
        The manifest's ``params`` and ``meta``.
    arrays : dict of str to numpy.ndarray
        Every array of the artifact.
    where : str
        The file's name, for messages.
    error : type
        The exception raised (``ArtifactError``).
    """
    check_state(cls_name, params, meta, arrays, where, error, CHECKS)
