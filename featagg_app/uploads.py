"""Turn an uploaded file (name + bytes) into a featagg dataset, safely.

No streamlit here, so the upload path is unit-testable without a browser. The sidebar
calls :func:`parse_upload` with the bytes of ``st.file_uploader``'s files.

Safety: the size is checked before parsing (:data:`MAX_UPLOAD_MB`), only the listed file
types are accepted, and parsing goes through ``featagg_core`` readers, which never
unpickle (npz is read with ``allow_pickle=False``) and never execute anything. The readers
run with the dashboard's load budget (:func:`max_load_bytes`: compressed members may
inflate to at most that many bytes, checked before inflating) and refuse declared sizes
over :data:`MAX_UPLOAD_DIM` before allocating anything of that size.
"""
from __future__ import annotations

import io
import logging
import os
from typing import Optional

MAX_UPLOAD_MB = 50
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
#: Largest number of points, features, labels or nodes an upload may declare. The pages keep
#: a few dense arrays per feature/label (counts, weights), so a header claiming billions of
#: columns in a tiny file would cost gigabytes on a server shared by a class.
MAX_UPLOAD_DIM = 5_000_000
#: default load budget of one upload (MiB): well under the memory of a server shared by a
#: class; ``FEATAGG_MAX_LOAD_MB`` (``scripts/dashboard.sh --max-load-mb``) overrides it
DEFAULT_LOAD_MB = 256


def max_load_bytes() -> int:
    """The load budget of one upload in bytes: ``FEATAGG_MAX_LOAD_MB`` when set to a
    positive number, else :data:`DEFAULT_LOAD_MB`."""
    text = os.environ.get("FEATAGG_MAX_LOAD_MB", "").strip()
    try:
        mb = float(text) if text else DEFAULT_LOAD_MB
    except ValueError:
        mb = DEFAULT_LOAD_MB
    return int((mb if mb > 0 else DEFAULT_LOAD_MB) * (1 << 20))

#: accepted extensions (without dot) of the main file, per kind of data
UPLOAD_TYPES = {
    "multilabel": ["txt", "svm", "svmlight", "libsvm", "arff", "npz"],
    "graph": ["txt", "edges", "edgelist", "el", "csv", "tsv", "graphml", "gml", "mat", "npz"],
    "table": ["csv", "tsv", "parquet", "npz"],
}
#: optional companion files: role -> (label, accepted extensions)
EXTRA_FILES = {
    "multilabel": {"xml": ("MULAN XML label header (for ARFF, optional)", ["xml"]),
                   "test": ("Test split (optional, same format)",
                            ["txt", "svm", "svmlight", "libsvm", "arff", "npz"])},
    "graph": {"features": ("Node features (optional)", ["txt", "svm", "npz", "npy"]),
              "labels": ("Node classes (optional)", ["txt", "csv", "tsv"])},
    "table": {},
}
FORMAT_HELP = {
    "multilabel": "Extreme Classification Repository text (\"N D L\" header), svmlight / "
                  "libsvm multi-label, MULAN ARFF (sparse or dense, add its XML label header), "
                  "or a featagg npz.",
    "graph": "Edge list (one \"u v\" pair per line), GraphML, GML, MATLAB .mat "
             "(network / attributes / group), or a featagg npz; optional node features "
             "and node classes files.",
    "table": "CSV / TSV / parquet (or a featagg npz) of categorical columns plus a binary "
             "(0/1) label column.",
}

_log = logging.getLogger("featagg_app")


class _NamedBytes(io.BytesIO):
    """BytesIO with a ``.name`` so readers name the file in their messages."""

    def __init__(self, raw: bytes, name: str):
        super().__init__(raw)
        self.name = name


def _ext(name: str) -> str:
    return os.path.splitext(os.path.basename(name).lower())[1].lstrip(".")


def check_file(name: str, raw: bytes, allowed: list, what: str = "file") -> None:
    """Raise DatasetError when ``raw`` is empty, over the cap, or ``name``'s type is not
    in ``allowed``."""
    from featagg_core.data import DatasetError
    if len(raw) > MAX_UPLOAD_BYTES:
        raise DatasetError(f"{what} is {len(raw) / 2**20:.1f} MB, over the "
                           f"{MAX_UPLOAD_MB} MB upload limit", path=name)
    if _ext(name) not in allowed:
        raise DatasetError(f"unsupported {what} type {('.' + _ext(name)) if _ext(name) else '(no extension)'}; "
                           f"expected one of {', '.join('.' + a for a in allowed)}", path=name)
    if not raw:
        raise DatasetError("empty file", path=name)


def parse_upload(kind: str, name: str, raw: bytes, *, extras: Optional[dict] = None,
                 label: Optional[str] = None):
    """Parse an uploaded file into a MultiLabelData / GraphData / CategoricalData.

    Parameters
    ----------
    kind : "multilabel" | "graph" | "table"
    name, raw : the file's name (its extension picks the format) and bytes.
    extras : optional companion files, ``role -> (name, bytes)`` with roles from
        :data:`EXTRA_FILES` ("xml" for ARFF; "features", "labels" for graphs).
    label : the label column (tables); None lets the reader use its default.

    Raises
    ------
    DatasetError
        For anything wrong with the input — including an unexpected failure inside a
        reader, which is logged with its traceback and reported as a DatasetError.
    """
    from featagg_core.data import DatasetError
    if kind not in UPLOAD_TYPES:
        raise DatasetError(f"unknown kind of data {kind!r}", path=name)
    check_file(name, raw, UPLOAD_TYPES[kind])
    kw = {}
    for role, (ename, eraw) in (extras or {}).items():
        if role not in EXTRA_FILES[kind]:
            raise DatasetError(f"unexpected companion file role {role!r} for {kind} data",
                               path=ename)
        check_file(ename, eraw, EXTRA_FILES[kind][role][1], what=f"{role} file")
        kw[role] = _NamedBytes(eraw, ename)
    try:
        import featagg_core.data as fd
        fh = _NamedBytes(raw, name)
        limits = {"max_bytes": max_load_bytes(), "max_dim": MAX_UPLOAD_DIM}
        if kind == "multilabel":
            data = fd.load_dataset(fh, **_reader_kwargs(fd.load_dataset, kw), **limits)
        elif kind == "graph":
            data = fd.load_graph(fh, **_reader_kwargs(fd.load_graph, kw), **limits)
        else:
            data = fd.load_categorical(fh, label=label or None, **limits)
    except DatasetError:
        raise
    except MemoryError as exc:
        raise DatasetError("not enough memory to load this file", path=name) from exc
    except Exception as exc:  # noqa: BLE001 - a bug in a reader must not reach the browser
        _log.error("featagg: reader failed on upload %r", name, exc_info=exc)
        raise DatasetError(f"could not read the file ({type(exc).__name__}: {exc})",
                           path=name) from exc
    _check_dimensions(data, name)
    if not getattr(data, "name", ""):
        try:
            data.name = os.path.basename(name)
        except Exception:  # noqa: BLE001 - frozen container: keep it nameless
            pass
    return data


def _check_dimensions(data, name: str) -> None:
    """Refuse an upload whose declared sizes exceed :data:`MAX_UPLOAD_DIM`."""
    from featagg_core.data import DatasetError
    dims = {}
    if data.kind == "multilabel":
        dims = {"points": data.X.shape[0], "features": data.X.shape[1],
                "labels": data.Y.shape[1]}
    elif data.kind == "graph":
        dims = {"nodes": data.A.shape[0], "features": data.X.shape[1]}
    for what, size in dims.items():
        if size > MAX_UPLOAD_DIM:
            raise DatasetError(f"the file declares {size:,} {what}; uploads are limited to "
                               f"{MAX_UPLOAD_DIM:,} (use the command line, python -m "
                               "featagg_core, for larger data)", path=name)


# Keyword names the readers may use for companion files; the first one a reader accepts
# is used (readers are written in parallel: this keeps the upload path working while
# their signatures settle).
_KW_ALIASES = {
    "xml": ("xml", "xml_path", "labels_xml", "label_xml", "header"),
    "test": ("test", "test_path"),
    "features": ("features", "features_path", "X", "attributes"),
    "labels": ("labels", "labels_path", "y", "classes"),
}


def _reader_kwargs(reader, kw: dict) -> dict:
    import inspect
    if not kw:
        return {}
    try:
        params = inspect.signature(reader).parameters
    except (TypeError, ValueError):
        params = {}
    out = {}
    for role, value in kw.items():
        for alias in _KW_ALIASES.get(role, (role,)):
            if alias in params:
                out[alias] = value
                break
        else:
            out[role] = value
    return out
