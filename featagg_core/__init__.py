"""featagg_core: shrink and organise huge sparse feature and label spaces.

The public names below are a contract (see DESIGN.md). They are imported lazily so
that ``import featagg_core`` stays cheap and never pulls in numba kernels that a
caller does not use. Nothing here imports streamlit.
"""
from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "DatasetError": "featagg_core.data",
    "MultiLabelData": "featagg_core.data",
    "GraphData": "featagg_core.data",
    "CategoricalData": "featagg_core.data",
    "load_dataset": "featagg_core.data",
    "load_xc": "featagg_core.data",
    "save_xc": "featagg_core.data",
    "load_graph": "featagg_core.data",
    "load_categorical": "featagg_core.data",
    "Defrag": "featagg_core.agglomeration.defrag",
    "Fiat": "featagg_core.agglomeration.fiat",
    "Refrag": "featagg_core.agglomeration.refrag",
    "KTXMLC": "featagg_core.xmlc.ktxmlc",
    "OneVsAll": "featagg_core.xmlc.ktxmlc",
    "DefragKTXMLC": "featagg_core.xmlc.ktxmlc",
    "BlockModel": "featagg_core.graph.block_model",
    "BMGUFS": "featagg_core.graph.bmgufs",
    "VocabularyCompressor": "featagg_core.vocab.compressor",
    "Pipeline": "featagg_core.runs.pipeline",
    "save_artifact": "featagg_core.artifacts.store",
    "load_artifact": "featagg_core.artifacts.store",
    "ArtifactError": "featagg_core.artifacts.registry",
}

__all__ = sorted(_EXPORTS) + ["metrics", "__version__"]


def __getattr__(name):
    if name == "metrics":
        return import_module("featagg_core.metrics")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'featagg_core' has no attribute {name!r}")
    return getattr(import_module(module), name)


def __dir__():
    return __all__
