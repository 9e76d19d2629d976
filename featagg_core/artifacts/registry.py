"""The classes an artifact may hold, and the error every artifact problem raises.

A leaf: it imports nothing of featagg, so any layer can raise :class:`ArtifactError` (an
estimator refusing a state it cannot rebuild) and look a class up by its short name without
importing the artifact store. Classes are named by module path, as strings, taken from the
package's public export table (``featagg_core._EXPORTS``, itself only strings): a manifest
names a class by its short name ("KTXMLC"), never by a module, so moving a module changes
this table and nothing in saved files.
"""
from __future__ import annotations

from importlib import import_module
from typing import Dict

#: the short names of the classes that can be saved and loaded as artifacts
ARTIFACT_CLASS_NAMES = ("Defrag", "Fiat", "Refrag", "KTXMLC", "OneVsAll", "DefragKTXMLC",
                        "BlockModel", "BMGUFS", "VocabularyCompressor", "Pipeline")


class ArtifactError(ValueError):
    """An artifact file is not one featagg can load: the message says why."""


def artifact_classes() -> Dict[str, str]:
    """The table of loadable classes.

    Returns
    -------
    dict
        Short class name -> the module defining it. Only these classes can be loaded.
    """
    from featagg_core import _EXPORTS
    return {name: _EXPORTS[name] for name in ARTIFACT_CLASS_NAMES}


def artifact_class(name: str) -> type:
    """The class registered as ``name`` (its module imported on first use).

    Parameters
    ----------
    name : str
        A short class name of :data:`ARTIFACT_CLASS_NAMES`.

    Returns
    -------
    type
        The class.

    Raises
    ------
    KeyError
        For a name that is not registered.
    """
    return getattr(import_module(artifact_classes()[name]), name)
