"""Validation shared by the readers: declared sizes against the int32 index space and the
load's budget, raw csr parts, duplicate columns, name lists, symmetric adjacency, class
vectors, and XML without DTDs.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.bounded import parse_xml_safely
from featagg_core.data._containers import DatasetError
from featagg_core.data._input import _budget, _fail_for


# Largest number of rows / columns / nodes a reader accepts: the int32 index space that
# scipy.sparse and the kernels use. A small file cannot claim more (it would make
# downstream code allocate arrays of that size).
_MAX_DIM = 2**31 - 1


def _check_dim(value: int, *, what: str, name: str, line=None, field=None) -> None:
    if value > _MAX_DIM:
        raise DatasetError(f"{what} = {value} exceeds the supported maximum {_MAX_DIM}",
                           path=name, line=line, field=field)


def _check_declared(dims: dict, *, name: str, line=None, field=None) -> None:
    """Declared sizes (rows, features, labels, nodes) against the load's ``max_dim`` and
    budget, before anything of their size is allocated here or downstream (8 bytes per
    row and column: an index pointer, a per-feature array)."""
    _budget().check_dims(dims, _fail_for(name, line=line, field=field))


def _row_of_entry(indptr: np.ndarray, pos: int) -> int:
    """Row (0-based) that holds the non-zero at position ``pos`` of a csr matrix."""
    return int(np.searchsorted(indptr, pos, side="right") - 1)


def _check_csr_parts(data, indices, indptr, shape, *, name: str, what: str,
                     binary: bool = False) -> sp.csr_matrix:
    """Validate raw csr parts and build a canonical csr float32 matrix.

    Checks: shape is two non-negative ints, indptr has n+1 entries starting at 0, is
    non-decreasing and ends at nnz, indices are integers in [0, n_cols), values are
    finite (and 0/1 when ``binary``), no duplicate column in a row. Explicit zeros are
    dropped; column indices are sorted.
    """
    try:
        shape = tuple(int(s) for s in np.asarray(shape).ravel())
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"{what}: shape is not a pair of integers", path=name,
                           field=f"{what}_shape") from exc
    if len(shape) != 2 or shape[0] < 0 or shape[1] < 0:
        raise DatasetError(f"{what}: shape must be two non-negative integers, got {shape}",
                           path=name, field=f"{what}_shape")
    n, m = shape
    _check_dim(max(n, m), what=f"{what} dimension", name=name, field=f"{what}_shape")
    _check_declared({f"{what} rows": n, f"{what} columns": m}, name=name, field=f"{what}_shape")
    data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
    for part, arr in (("indices", indices), ("indptr", indptr)):
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise DatasetError(f"{what}: {part} must be a 1-D integer array, got "
                               f"{arr.dtype} with {arr.ndim} dimensions",
                               path=name, field=f"{what}_{part}")
    if data.ndim != 1 or not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise DatasetError(f"{what}: data must be a 1-D numeric array, got {data.dtype}",
                           path=name, field=f"{what}_data")
    if np.iscomplexobj(data):
        raise DatasetError(f"{what}: complex values are not supported", path=name,
                           field=f"{what}_data")
    if indptr.shape[0] != n + 1:
        raise DatasetError(f"{what}: indptr has {indptr.shape[0]} entries, expected "
                           f"{n + 1} for {n} rows", path=name, field=f"{what}_indptr")
    nnz = data.shape[0]
    if indices.shape[0] != nnz:
        raise DatasetError(f"{what}: {indices.shape[0]} indices but {nnz} values",
                           path=name, field=f"{what}_indices")
    if indptr[0] != 0 or indptr[-1] != nnz:
        raise DatasetError(f"{what}: indptr must start at 0 and end at nnz={nnz}, got "
                           f"{int(indptr[0])}..{int(indptr[-1])}", path=name,
                           field=f"{what}_indptr")
    if n > 0 and np.any(np.diff(indptr) < 0):
        r = int(np.flatnonzero(np.diff(indptr) < 0)[0])
        raise DatasetError(f"{what}: indptr decreases at row {r}", path=name,
                           field=f"{what}_indptr")
    if nnz:
        bad = (indices < 0) | (indices >= m)
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"{what}: column index {int(indices[p])} out of range "
                               f"[0, {m}) in row {_row_of_entry(indptr, p)}", path=name,
                               field=f"{what}_indices")
        vals = data.astype(np.float64, copy=False)
        fin = np.isfinite(vals)
        if not fin.all():
            p = int(np.flatnonzero(~fin)[0])
            raise DatasetError(f"{what}: non-finite value {vals[p]} in row "
                               f"{_row_of_entry(indptr, p)}", path=name, field=f"{what}_data")
        if binary:
            nb = (vals != 0) & (vals != 1)
            if nb.any():
                p = int(np.flatnonzero(nb)[0])
                raise DatasetError(f"{what}: labels must be 0/1, found {vals[p]} in row "
                                   f"{_row_of_entry(indptr, p)}", path=name,
                                   field=f"{what}_data")
        with np.errstate(over="ignore"):      # reported just below, with its row
            f32 = vals.astype(np.float32)
        if not np.isfinite(f32).all():
            p = int(np.flatnonzero(~np.isfinite(f32))[0])
            raise DatasetError(f"{what}: value {vals[p]} overflows float32 in row "
                               f"{_row_of_entry(indptr, p)}", path=name, field=f"{what}_data")
    else:
        f32 = np.zeros(0, np.float32)
    idx_dtype = np.int32 if max(n, m, nnz) < 2**31 - 1 else np.int64
    M = sp.csr_matrix((f32, indices.astype(idx_dtype, copy=False),
                       indptr.astype(idx_dtype, copy=False)), shape=(n, m))
    _check_no_duplicates(M, name=name, what=what)
    if nnz and (f32 == 0).any():
        M.eliminate_zeros()
    return M


def _check_no_duplicates(M: sp.csr_matrix, *, name: str, what: str) -> None:
    """Raise DatasetError when a row of csr ``M`` names the same column twice; sort the
    column indices of each row otherwise."""
    if M.nnz == 0:
        return
    r, c = _first_duplicate(M.indptr, M.indices)
    if r >= 0:
        raise DatasetError(f"{what}: column {int(c)} appears twice in row {int(r)}",
                           path=name, field=what)
    if not M.has_sorted_indices:
        M.sort_indices()


def _check_names(names, expected: int, *, name: str, what: str):
    if names is None:
        return None
    arr = np.asarray(names)
    if arr.ndim != 1 or arr.shape[0] != expected:
        raise DatasetError(f"{what}: expected {expected} names, got shape {arr.shape}",
                           path=name, field=what)
    return [str(s) for s in arr.tolist()]


def _check_symmetric(A: sp.csr_matrix, *, name: str, what: str) -> None:
    D = (A - A.T).tocsr()
    D.eliminate_zeros()
    if D.nnz:
        i = _row_of_entry(D.indptr, 0)
        j = int(D.indices[0])
        raise DatasetError(f"{what} is not symmetric: A[{i},{j}]={A[i, j]} but "
                           f"A[{j},{i}]={A[j, i]}", path=name, field=what)


def _check_classes(y, n: int, *, name: str, what: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise DatasetError(f"{what} must have one class per node ({n}), got shape {y.shape}",
                           path=name, field=what)
    if not np.issubdtype(y.dtype, np.integer):
        raise DatasetError(f"{what} must be integers, got {y.dtype}", path=name, field=what)
    if y.size and y.min() < -1:
        raise DatasetError(f"{what} has class {int(y.min())} (classes are >= 0, -1 = "
                           f"unknown)", path=name, field=what)
    return y.astype(np.int64)


def _first_duplicate(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, int]:
    """First (row, column) of a csr structure whose row names a column twice, or (-1, -1).

    Vectorised: rows are sorted by scipy (C) only when they are not already, then equal
    neighbours inside a row are looked for. Memory is O(nnz), never O(number of columns),
    so a tiny file that claims a huge index space cannot make this allocate."""
    if indices.size < 2:
        return -1, -1
    n = indptr.shape[0] - 1
    M = sp.csr_matrix((np.ones(indices.size, np.int8), indices, indptr),
                      shape=(n, int(indices.max()) + 1))
    if not M.has_sorted_indices:
        M = M.copy()
        M.sort_indices()
    same = M.indices[1:] == M.indices[:-1]
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < indices.size)]
    same[starts - 1] = False               # neighbours across a row boundary do not count
    if not same.any():
        return -1, -1
    q = int(np.flatnonzero(same)[0])
    return _row_of_entry(indptr, q + 1), int(M.indices[q])


def _reject_dtd(raw: bytes, name: str, what: str = "XML") -> None:
    """Refuse XML with a DTD or entity declarations (entity expansion, external
    entities) before any other XML parser sees it. The check is expat's own, on the
    decoded document, so it holds in every encoding (UTF-16 included); malformed XML is
    refused here too."""
    parse_xml_safely(raw, _fail_for(name), what=what)
