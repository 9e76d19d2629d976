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

from featagg_core.data import DatasetError

def _upload_mb() -> int:
    """The per-file cap of a data upload in MB: ``FEATAGG_MAX_UPLOAD_MB`` when set to a
    positive whole number, else 50. The sidebar's uploaders pass it to Streamlit as their
    ``max_upload_size``, and :func:`check_file` checks it again before parsing. Larger data
    belongs in the server's data folder (``FEATAGG_DATA_DIR``), which has no cap."""
    try:
        mb = int(os.environ.get("FEATAGG_MAX_UPLOAD_MB", "").strip() or 50)
    except ValueError:
        mb = 50
    return mb if mb > 0 else 50


MAX_UPLOAD_MB = _upload_mb()
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
#: Per-file cap of an artifact or bundle import on the Export page (MB). A pipeline fitted
#: on a large dataset is bigger than the data uploads a class needs, hence its own cap.
MAX_IMPORT_MB = 200


def server_upload_cap_mb() -> int:
    """The ``server.maxUploadSize`` the dashboard must run with: the largest of its
    uploaders' caps. Streamlit's server refuses any upload over that option whatever the
    widget says (a widget's ``max_upload_size`` can only lower it), so with a smaller
    server cap an uploader would promise sizes the server then refuses. Every uploader
    passes its own, smaller or equal, ``max_upload_size``."""
    return max(MAX_UPLOAD_MB, MAX_IMPORT_MB)
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
                 label: Optional[str] = None, n_labels: Optional[int] = None):
    """Parse an uploaded file into a MultiLabelData / GraphData / CategoricalData.

    Parameters
    ----------
    kind : "multilabel" | "graph" | "table"
    name, raw : the file's name (its extension picks the format) and bytes.
    extras : optional companion files, ``role -> (name, bytes)`` with roles from
        :data:`EXTRA_FILES` ("xml" for ARFF; "features", "labels" for graphs).
    label : the label column (tables); None lets the reader use its default.
    n_labels : the number of label columns at the end of an ARFF without its XML.

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
    if n_labels is not None and kind == "multilabel" and "xml" not in kw:
        kw["n_labels"] = int(n_labels)
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
        # a reader's own failure, not the file's: the person is told so, the log has the rest
        raise DatasetError("could not read the file: the reader stopped unexpectedly (the "
                           "server's log has the details)", path=name) from exc
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


# ---------------------------------------------------------------------------
# the upload boundary: messages in the dashboard's words, what to ask for
# ---------------------------------------------------------------------------

class UploadError(DatasetError):
    """A DatasetError in the dashboard's words (:func:`featagg_app.intake.guidance.ui_message`);
    ``needs`` names the widget that would let the file load: ``"n_labels"`` (an ARFF
    without its XML), ``"label"`` (a table whose label column is not obvious), or None."""

    def __init__(self, exc, needs: Optional[str] = None):
        from featagg_app.intake.guidance import ui_message
        super().__init__(ui_message(getattr(exc, "reason", str(exc))),
                         path=getattr(exc, "path", None), line=getattr(exc, "line", None),
                         field=getattr(exc, "field", None))
        self.needs = needs


def read_upload(kind: str, name: str, raw: bytes, *, extras: Optional[dict] = None,
                label: Optional[str] = None, n_labels: Optional[int] = None):
    """:func:`parse_upload` as the sidebar calls it: the dataset keeps the uploaded file's
    name (``"train.txt"``, not the reader's ``"train"``), and every failure is an
    :class:`UploadError` whose message has no API keyword (no "pass xml=") and whose
    ``needs`` says which widget would fix it."""
    from featagg_app.intake.guidance import needed_option
    try:
        data = parse_upload(kind, name, raw, extras=extras, label=label, n_labels=n_labels)
    except DatasetError as exc:
        raise UploadError(exc, needed_option(str(exc))) from exc
    try:
        data.name = os.path.basename(str(name)) or data.name
    except Exception:  # noqa: BLE001 - frozen container: keep the reader's name
        pass
    return data


_LABEL_NAMES = ("label", "target", "class", "y", "click")
#: rows looked at to propose a label column (the reader checks every row)
_PROPOSE_ROWS = 20_000
#: the most bytes of a CSV / TSV the label proposal parses
_PROPOSE_BYTES = 2 << 20


def _parquet_head(raw: bytes):
    """The first rows of a parquet upload for :func:`propose_label`, or None when looking
    would cost more than a fraction of the load budget: its footer (10^6 columns in a
    16 MB footer took 1.4 GB to parse, and reading the table 5 GB), its columns or its
    first row group, all checked before anything is parsed or read."""
    import pyarrow.parquet as pq
    from featagg_core.data.tables import COLUMN_BYTES, PARQUET_FOOTER_FACTOR
    allowance = max_load_bytes() // 4
    if len(raw) < 12 or raw[-4:] != b"PAR1" or \
            PARQUET_FOOTER_FACTOR * int.from_bytes(raw[-8:-4], "little") > allowance:
        return None
    pf = pq.ParquetFile(io.BytesIO(raw))
    meta = pf.metadata
    if meta.num_row_groups == 0 or COLUMN_BYTES * meta.num_columns > allowance or \
            meta.row_group(0).total_byte_size > allowance:
        return None
    batch = next(pf.iter_batches(batch_size=_PROPOSE_ROWS), None)
    return None if batch is None else batch.to_pandas()


def propose_label(name: str, raw: bytes) -> Optional[str]:
    """The label column to propose for an uploaded table: its only column of 0/1 values
    (both present, in the first rows), when the reader would not find one by name
    (``label``, ``target``, ``class``, ``y``, ``click``); else None. Never raises."""
    import pandas as pd
    ext = _ext(name)
    try:
        if ext == "parquet":
            df = _parquet_head(raw)
            if df is None:
                return None
        elif ext in ("csv", "tsv"):
            # only the first lines (at most _PROPOSE_BYTES): a 45 MB table of short cells
            # costs gigabytes parsed whole, and the budget is the reader's to charge
            head = raw[:_PROPOSE_BYTES]
            if len(raw) > _PROPOSE_BYTES:
                head = head[:head.rfind(b"\n") + 1]
            df = pd.read_csv(io.BytesIO(head), sep="\t" if ext == "tsv" else ",", dtype=str,
                             nrows=_PROPOSE_ROWS, keep_default_na=False)
        else:
            return None
    except Exception:  # noqa: BLE001 - the reader will say what is wrong
        return None
    cols = [str(c) for c in df.columns]
    if sum(c.lower() in _LABEL_NAMES for c in cols) == 1:
        return None
    binary = []
    for c, col in zip(cols, df.columns):
        vals = set(df[col].astype(str).str.strip().unique().tolist())
        if vals == {"0", "1"}:
            binary.append(c)
    return binary[0] if len(binary) == 1 else None
