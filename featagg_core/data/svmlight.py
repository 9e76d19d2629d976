"""svmlight / libsvm multilabel text: :func:`load_svmlight` and the shape decisions across
files (sklearn's rules) that :func:`~featagg_core.data.load_dataset` shares for ``test=``.
"""
from __future__ import annotations

import numpy as np

from featagg_core.data._containers import DatasetError, MultiLabelData
from featagg_core.data._input import _blank, _guard, _read_bytes, _stem
from featagg_core.data._text import _finish_matrix, _line_of_entry, _Parsed, _tokenise
from featagg_core.utils.docstrings import fill_doc


def _svmlight_assemble(parsed_list, zero_based="auto", n_features=None, n_labels=None):
    """Shape decisions across files (sklearn's rules), then matrices per file.

    zero_based="auto": indices are shifted down by one when every file has features and
    none uses index 0 (sklearn's heuristic); True: used as given; False: 1-based (an index
    0 is an error). Labels are used as column indices as given (no shift).
    """
    if zero_based not in ("auto", True, False):
        raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")
    if zero_based == "auto":
        shift = all(p.indices.size and int(p.indices.min()) > 0 for p in parsed_list)
    else:
        shift = not zero_based
    for p in parsed_list:
        if shift:
            if p.indices.size and int(p.indices.min()) == 0:
                q = int(np.flatnonzero(p.indices == 0)[0])
                raise DatasetError("feature index 0 in a 1-based file (zero_based=False)",
                                   path=p.name, line=_line_of_entry(p, p.indptr, q))
            p.indices = p.indices - 1
    max_f = max((int(p.indices.max()) + 1 if p.indices.size else 0) for p in parsed_list)
    max_l = max((int(p.labels.max()) + 1 if p.labels.size else 0) for p in parsed_list)
    d = max_f if n_features is None else int(n_features)
    L = max_l if n_labels is None else int(n_labels)
    out = []
    for p in parsed_list:
        if p.n_rows == 0:
            raise DatasetError("no data rows", path=p.name)
        X = _finish_matrix(p, p.indptr, p.indices, p.values, d, what="feature")
        Y = _finish_matrix(p, p.lab_ptr, p.labels, None, L, what="label")
        out.append((X, Y))
    return out


def _svmlight_parse(raw: bytes, name: str) -> _Parsed:
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    return _tokenise(raw, name, 0, 1, True, True)


@_guard
@fill_doc
def load_svmlight(path_or_file, *, zero_based="auto", n_features=None,
                  n_labels=None) -> MultiLabelData:
    """Read svmlight/libsvm multilabel text (``l1,l2 i:v i:v ...``, no header; ``#``
    comments, blank lines and ``qid:`` are skipped as sklearn does) with the numba
    tokenizer of :func:`load_xc`. See :func:`_svmlight_assemble` for ``zero_based``.
    NaN/inf values are rejected (sklearn accepts them).

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The file (a file-like object is named by its ``.name``).
    zero_based : {"auto", True, False}
        ``"auto"``: indices are shifted down by one when the file has features and none
        has index 0 (sklearn's heuristic); True: used as given; False: 1-based (an index
        0 is an error). Labels are never shifted.
    n_features : int, optional
        The number of features (default: the largest index + 1).
    n_labels : int, optional
        The number of labels (default: the largest label + 1).
    {load_limits}

    Returns
    -------
    MultiLabelData
        X csr float32, Y csr float32 of 0/1; named by the file's stem.

    Raises
    ------
    DatasetError
        For any malformed input (and for a bad ``zero_based``).
    """
    raw, name = _read_bytes(path_or_file)
    (X, Y), = _svmlight_assemble([_svmlight_parse(raw, name)], zero_based, n_features,
                                 n_labels)
    return MultiLabelData(X=X, Y=Y, name=_stem(name), source=f"svmlight: {name}")
