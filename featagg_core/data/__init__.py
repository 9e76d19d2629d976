"""Dataset containers, readers and writers.

Containers: :class:`MultiLabelData` (X csr float32 n x d, Y csr float32 0/1 n x L),
:class:`GraphData` (A symmetric csr float32, X csr float32, y int64 with -1 = unknown) and
:class:`CategoricalData` (a table of text columns + an int8 0/1 label).

Readers (each takes a path or a binary file-like object with a ``.name``, as Streamlit's
``UploadedFile``; none unpickles or executes anything):

- :func:`load_dataset` -- dispatch by extension and content: npz (:func:`save_npz`),
  Extreme Classification Repository text (:func:`load_xc`, combined ``N D L`` or split
  ``N D`` + ``N L`` files), svmlight/libsvm multilabel (:func:`load_svmlight`), MULAN ARFF
  sparse and dense with its XML label header (:func:`load_arff`); ``test=`` fills the
  held-out split.
- :func:`load_graph` -- edge lists, GraphML, GML, MATLAB .mat, npz; :func:`planetoid_to_npz`
  converts trusted planetoid pickles (the only place that unpickles, with a restricted
  unpickler, never on uploads).
- :func:`load_categorical` -- CSV/TSV/parquet (and npz) tables with a binary label.

Writers: :func:`save_npz` (all three containers) and :func:`save_xc`, both atomic
(temporary file + ``os.replace``).

Text formats are tokenised by numba kernels over the raw bytes
(:mod:`featagg_core._kernels.parse`); numbers are converted exactly (see :func:`load_xc`).
Every reader validates its input once at the boundary and raises :class:`DatasetError`
(a ``ValueError``) naming the file, the line or field, and what is wrong: wrong header
counts, indices out of range or negative, NaN/inf values, duplicate indices, non-binary
labels, empty files, bytes that are not ASCII/UTF-8, truncated lines. Nothing else escapes
a reader (:func:`_guard`). :func:`warmup` compiles the parsing kernels.

Hostile input: every public reader takes ``max_bytes=`` and ``max_dim=`` (a
:class:`featagg_core.utils.bounded.Budget` for the load). Compressed npz members, ``.mat``
variables and parquet row groups are charged to the budget from their declared sizes
*before* they are inflated, and only the members / variables a layout needs are read;
declared dimensions are checked against the budget and ``max_dim`` before anything of that
size is allocated. Every reader is linear in its input (edge-list names interned by a hash
table, node attributes in one pass, sets for duplicate checks, CSV by the ``csv`` module
into one block); XML is parsed by expat refusing DTDs and entities on the decoded
document, whatever its encoding.

Layout (the package replaces the former single module; every name it had is still
importable from ``featagg_core.data``): :mod:`._containers` (the containers,
:class:`DatasetError`, fingerprints), :mod:`._input` (reading bytes, the load budget,
:func:`_guard`, atomic writes, file names), :mod:`._checks` (validation shared by the
readers), :mod:`._text` (the numba tokeniser's results and messages, shared by the text
formats; :func:`warmup`), one module per format -- :mod:`.npz`, :mod:`.xc`,
:mod:`.svmlight`, :mod:`.arff`, :mod:`.multilabel` (:func:`load_dataset`),
:mod:`._graph_parts` (shared by the graph formats), :mod:`.matlab`, :mod:`.graphs`
(:func:`load_graph`), :mod:`.planetoid`, :mod:`.tables` -- each importing only from the
modules before it in that list. Built on the readers: :mod:`.synthetic` (data of any size
with planted structure), :mod:`.samples` (the bundled sample datasets by name),
:mod:`.mapped_npz` (the memory-mapped npz cache file) and :mod:`.cache` (a server-side data
folder: listing, safe paths, the disk cache and a store of opened datasets).
"""
from __future__ import annotations

from importlib import import_module

from featagg_core.data._containers import CategoricalData, DatasetError, GraphData, MultiLabelData
from featagg_core.data._input import _atomic_write, _NamedBytes
from featagg_core.data._text import warmup
from featagg_core.data.npz import save_npz
from featagg_core.data.xc import load_xc, save_xc
from featagg_core.data.svmlight import load_svmlight
from featagg_core.data.arff import load_arff
from featagg_core.data.multilabel import load_dataset
from featagg_core.data.graphs import load_graph
from featagg_core.data.planetoid import planetoid_to_npz
from featagg_core.data.tables import load_categorical

#: where the private helpers of the former single module now live, searched by
#: :func:`__getattr__` so ``from featagg_core.data import _read_bytes`` (or any other
#: private name it had) keeps working
_SUBMODULES = ("_containers", "_input", "_checks", "_text", "npz", "xc", "svmlight", "arff",
               "multilabel", "_graph_parts", "matlab", "graphs", "planetoid", "tables")


def __getattr__(name: str):
    """A private helper of the former single-module ``featagg_core.data`` (by name).

    Parameters
    ----------
    name : str
        The attribute asked for, e.g. ``"_read_bytes"``.

    Returns
    -------
    object
        The helper, from the submodule that defines it now.

    Raises
    ------
    AttributeError
        When no submodule has a private name ``name``.
    """
    if name.startswith("_") and not name.startswith("__"):
        for sub in _SUBMODULES:
            module = import_module(f"{__name__}.{sub}")
            if name in vars(module):
                return vars(module)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
