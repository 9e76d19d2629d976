"""The Extreme Classification Repository text format: :func:`load_xc` (combined ``N D L`` and
split ``N D`` + ``N L`` files) and :func:`save_xc`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import DatasetError, MultiLabelData
from featagg_core.data._input import _atomic_write, _blank, _guard, _read_bytes, _stem
from featagg_core.data._checks import _check_declared, _check_dim
from featagg_core.data._text import (
    _finish_matrix,
    _format_values,
    _header_line,
    _int_header,
    _tokenise,
    _trim_rows,
)
from featagg_core.utils.docstrings import fill_doc


def _xc_header(raw: bytes, name: str, counts: tuple) -> tuple[list, int]:
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    text, end = _header_line(raw, name)
    h = _int_header(text)
    if h is None or len(h) not in counts:
        want = " or ".join({3: "'N D L'", 2: "'N D'"}[c] for c in counts)
        raise DatasetError(f"header must be {want} (non-negative integers), found "
                           f"{text.strip()[:60]!r}", path=name, line=1)
    for v in h:
        _check_dim(v, what="a header count", name=name, line=1)
    _check_declared(dict(zip(("rows", "features", "labels"), h)), name=name, line=1)
    return h, end


def _load_xc_split(raw: bytes, name: str, labels_path) -> MultiLabelData:
    (n, d), start = _xc_header(raw, name, (2,))
    px = _tokenise(raw, name, start, 2, False, False)
    _trim_rows(px, n)
    X = _finish_matrix(px, px.indptr, px.indices, px.values, d, what="feature")
    rawy, namey = _read_bytes(labels_path)
    (ny, L), starty = _xc_header(rawy, namey, (2,))
    if ny != n:
        raise DatasetError(f"the labels file has {ny} rows but the features file {name} has "
                           f"{n}", path=namey, line=1)
    py = _tokenise(rawy, namey, starty, 2, False, False)
    _trim_rows(py, ny)
    Y = _finish_matrix(py, py.indptr, py.indices, py.values, L, what="label", binary=True)
    return MultiLabelData(X=X, Y=Y, name=_stem(name), source=f"XC split format: {name} + "
                          f"{namey}")


@_guard
@fill_doc
def load_xc(path_or_file, labels_path=None) -> MultiLabelData:
    """Read the Extreme Classification Repository text format.

    Combined format: a header ``N D L`` then N lines ``l1,l2,... i:v i:v ...`` (labels and
    feature indices 0-based; a line with no labels starts with the first ``i:v`` or is
    empty). Split format: ``load_xc(features, labels_path=labels)`` with a features file
    (header ``N D``, lines ``i:v ...``) and a labels file (header ``N L``, lines ``l:1``).

    Parsed by a numba kernel over the raw bytes. Numbers with at most 15 significant digits
    and a decimal exponent within ±22 are converted exactly in the kernel (Clinger's fast
    path); the rare others are converted by Python's correctly rounded ``float``; the
    float64 value is then rounded to float32, which is what ``strtod`` + a float32 cast
    (sklearn's reader) gives. Blank lines after the last row are tolerated; any other
    count mismatch, out-of-range or duplicate index, NaN/inf value, or malformed token is
    a DatasetError naming the line.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The combined file, or the split format's features file (a file-like object, such
        as Streamlit's ``UploadedFile``, is named by its ``.name``).
    labels_path : str, os.PathLike or binary file-like, optional
        The split format's labels file (header ``N L``); only with a features file.
    {load_limits}

    Returns
    -------
    MultiLabelData
        X csr float32 n x D, Y csr float32 of 0/1 n x L; named by the file's stem.

    Raises
    ------
    DatasetError
        For any malformed input (and for ``labels_path`` given with a combined file, or
        missing with a features file).
    """
    raw, name = _read_bytes(path_or_file)
    return _load_xc_raw(raw, name, labels_path)


def _load_xc_raw(raw: bytes, name: str, labels_path=None) -> MultiLabelData:
    h, start = _xc_header(raw, name, (3, 2))
    if len(h) == 2:
        if labels_path is None:
            raise DatasetError("header 'N D' is the XC split format's features file: pass "
                               "the labels file as labels_path=", path=name, line=1)
        return _load_xc_split(raw, name, labels_path)
    if labels_path is not None:
        raise DatasetError("labels_path= given but the header 'N D L' says the labels are "
                           "in this file", path=name, line=1)
    n, d, L = h
    px = _tokenise(raw, name, start, 2, True, False)
    _trim_rows(px, n)
    X = _finish_matrix(px, px.indptr, px.indices, px.values, d, what="feature")
    Y = _finish_matrix(px, px.lab_ptr, px.labels, None, L, what="label")
    return MultiLabelData(X=X, Y=Y, name=_stem(name), source=f"XC format: {name}")


def _as_X_Y(data_or_X_Y, what="save_xc"):
    if isinstance(data_or_X_Y, MultiLabelData):
        X, Y = data_or_X_Y.X, data_or_X_Y.Y
    else:
        try:
            X, Y = data_or_X_Y
        except (TypeError, ValueError):
            raise TypeError(f"{what}: expected a MultiLabelData or an (X, Y) pair") from None
    X = sp.csr_matrix(X, dtype=np.float32)
    Y = sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"{what}: X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    X.sum_duplicates()
    X.eliminate_zeros()
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if X.nnz and not np.isfinite(X.data).all():
        raise ValueError(f"{what}: X has NaN/inf values")
    if Y.nnz and not (Y.data == 1).all():
        raise ValueError(f"{what}: Y must be 0/1")
    return X, Y


def _xc_bytes(X, Y, with_labels: bool) -> bytes:
    from featagg_core._kernels.parse import write_sparse_lines
    codes, table, lens = _format_values(X.data)
    body = write_sparse_lines(X.indptr.astype(np.int64), X.indices.astype(np.int64), codes,
                              table, lens, Y.indptr.astype(np.int64),
                              Y.indices.astype(np.int64), with_labels)
    return body.tobytes()


def save_xc(data_or_X_Y, path, labels_path=None) -> None:
    """Write the XC text format (atomically: temporary file + ``os.replace``).

    ``data_or_X_Y``: a MultiLabelData (its training part) or an ``(X, Y)`` pair. With
    ``labels_path`` the split format is written: ``path`` gets ``N D`` and ``i:v`` lines,
    ``labels_path`` gets ``N L`` and ``l:1`` lines. Values are written as the shortest
    decimal that reads back to the same float32 (numpy's repr, '.0' dropped), so
    ``load_xc(save_xc(X, Y))`` gives bit-identical arrays; explicit zeros are not written.

    Parameters
    ----------
    data_or_X_Y : MultiLabelData or tuple
        The dataset (its training part), or an ``(X, Y)`` pair of matrices with the same
        number of rows (Y of 0/1).
    path : str or os.PathLike
        The file to write (the combined format, or the split format's features file).
    labels_path : str or os.PathLike, optional
        Write the split format: the labels go to this file.

    Raises
    ------
    TypeError
        When ``data_or_X_Y`` is neither a MultiLabelData nor an ``(X, Y)`` pair.
    ValueError
        When X and Y have different numbers of rows, X has NaN/inf values or Y is not 0/1.
    """
    X, Y = _as_X_Y(data_or_X_Y)
    n, d = X.shape
    L = Y.shape[1]
    if labels_path is None:
        body = _xc_bytes(X, Y, True)
        _atomic_write(path, lambda fh: (fh.write(f"{n} {d} {L}\n".encode()), fh.write(body)))
        return
    body = _xc_bytes(X, Y, False)
    Yv = sp.csr_matrix((np.ones(Y.nnz, np.float32), Y.indices, Y.indptr), shape=Y.shape)
    ybody = _xc_bytes(Yv, Yv, False)
    _atomic_write(path, lambda fh: (fh.write(f"{n} {d}\n".encode()), fh.write(body)))
    _atomic_write(labels_path, lambda fh: (fh.write(f"{n} {L}\n".encode()), fh.write(ybody)))
