"""Dataset containers, readers and writers.

Every reader validates its input once at the boundary and raises :class:`DatasetError`
(a ``ValueError``) naming the file, the line or field, and what is wrong. Nothing else
escapes a reader.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp


class DatasetError(ValueError):
    """Malformed or unsupported input: the message names file, line/field and problem."""

    def __init__(self, message: str, *, path: Optional[str] = None, line: Optional[int] = None,
                 field: Optional[str] = None):
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field}")
        self.path, self.line, self.field = path, line, field
        self.reason = message
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


def _fingerprint(*arrays) -> str:
    """Stable short hash of the content of arrays / sparse matrices (cache keys, artifacts)."""
    h = hashlib.sha1()
    for a in arrays:
        if a is None:
            h.update(b"none")
        elif sp.issparse(a):
            a = a.tocsr()
            h.update(repr((a.shape, str(a.dtype))).encode())
            for part in (a.indptr, a.indices, a.data):
                h.update(np.ascontiguousarray(part).tobytes())
        else:
            arr = np.asarray(a)
            if arr.dtype == object:
                h.update("\x1f".join(map(str, arr.ravel().tolist())).encode("utf-8", "replace"))
            else:
                h.update(repr((arr.shape, str(arr.dtype))).encode())
                h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:16]


@dataclass
class MultiLabelData:
    """A sparse multi-label dataset.

    X : csr float32, n x d.   Y : csr float32 of 0/1, n x L.
    ``X_test``/``Y_test`` hold a held-out split when the source has one.
    """
    X: sp.csr_matrix
    Y: sp.csr_matrix
    feature_names: Optional[Sequence[str]] = None
    label_names: Optional[Sequence[str]] = None
    X_test: Optional[sp.csr_matrix] = None
    Y_test: Optional[sp.csr_matrix] = None
    name: str = ""
    source: str = ""
    kind: str = field(default="multilabel", init=False)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_labels(self) -> int:
        return self.Y.shape[1]

    @property
    def fingerprint(self) -> str:
        return _fingerprint(self.X, self.Y, self.X_test, self.Y_test)


@dataclass
class GraphData:
    """An attributed graph: A csr n x n symmetric, X node features (csr), y classes or None."""
    A: sp.csr_matrix
    X: sp.csr_matrix
    y: Optional[np.ndarray] = None
    feature_names: Optional[Sequence[str]] = None
    class_names: Optional[Sequence[str]] = None
    name: str = ""
    source: str = ""
    kind: str = field(default="graph", init=False)

    @property
    def n_nodes(self) -> int:
        return self.A.shape[0]

    @property
    def fingerprint(self) -> str:
        return _fingerprint(self.A, self.X, self.y)


@dataclass
class CategoricalData:
    """A table of categorical columns with a binary label.

    table : pandas.DataFrame of the categorical columns (label column removed).
    labels : int8 array of 0/1, one per row.
    """
    table: "object"
    labels: np.ndarray
    label_name: str = "label"
    name: str = ""
    source: str = ""
    kind: str = field(default="table", init=False)

    @property
    def n_rows(self) -> int:
        return len(self.labels)

    @property
    def columns(self):
        return list(self.table.columns)

    @property
    def fingerprint(self) -> str:
        cols = [self.table[c].astype(str).to_numpy() for c in self.table.columns]
        return _fingerprint(self.labels, *cols)


# ---------------------------------------------------------------------------
# input plumbing
# ---------------------------------------------------------------------------
import io
import os
import tempfile

_MAX_NAME = 200


def _source_name(path_or_file) -> str:
    """A printable name for error messages: the path, or the file object's ``.name``."""
    if isinstance(path_or_file, (str, os.PathLike)):
        return os.fspath(path_or_file)
    name = getattr(path_or_file, "name", None)
    return str(name) if name else "<upload>"


def _read_bytes(path_or_file) -> tuple[bytes, str]:
    """Read the whole input as bytes: a path, or a binary file-like object (Streamlit's
    ``UploadedFile`` included). Returns ``(bytes, name)``; OS errors become DatasetError."""
    name = _source_name(path_or_file)
    try:
        if isinstance(path_or_file, (str, os.PathLike)):
            with open(path_or_file, "rb") as fh:
                raw = fh.read()
        elif isinstance(path_or_file, (bytes, bytearray, memoryview)):
            raw = bytes(path_or_file)
        else:
            if hasattr(path_or_file, "getvalue"):
                raw = path_or_file.getvalue()
            else:
                if hasattr(path_or_file, "seek"):
                    try:
                        path_or_file.seek(0)
                    except Exception:
                        pass
                raw = path_or_file.read()
            if isinstance(raw, str):
                raw = raw.encode("utf-8")
            raw = bytes(raw)
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader lets nothing else escape
        raise DatasetError(f"cannot read input ({type(exc).__name__}: {exc})", path=name) from exc
    return raw, name


def _atomic_write(path, write_fn) -> None:
    """Write ``path`` through a temporary file in the same folder and ``os.replace`` it in,
    so a reader never sees a half-written file. ``write_fn(fileobj)`` writes the content."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path)[-_MAX_NAME:],
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write_fn(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------
# validation shared by every reader
# ---------------------------------------------------------------------------

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


def _check_no_duplicates(M: sp.csr_matrix, *, name: str, what: str, line_offset=None) -> None:
    """Raise DatasetError when a row of csr ``M`` names the same column twice."""
    if M.nnz == 0:
        return
    from ._kernels.parse import first_duplicate
    r, c = first_duplicate(M.indptr, M.indices, M.shape[1])
    if r >= 0:
        if line_offset is not None:
            raise DatasetError(f"{what}: index {int(c)} appears twice on the line",
                               path=name, line=int(line_offset[r]))
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


# ---------------------------------------------------------------------------
# npz (all three containers)
# ---------------------------------------------------------------------------

def _sparse_parts(prefix: str, M) -> dict:
    M = sp.csr_matrix(M)
    M.sum_duplicates()
    return {f"{prefix}_data": np.asarray(M.data, np.float32),
            f"{prefix}_indices": np.asarray(M.indices, np.int64 if M.nnz >= 2**31 else np.int32),
            f"{prefix}_indptr": np.asarray(M.indptr, np.int64),
            f"{prefix}_shape": np.asarray(M.shape, np.int64)}


def _str_array(values) -> np.ndarray:
    return np.asarray([str(v) for v in values], dtype=np.str_) if len(values) else \
        np.zeros(0, dtype="U1")


def save_npz(data, path) -> None:
    """Write a MultiLabelData, GraphData or CategoricalData to ``path`` as a compressed npz.

    Layout (read back with ``allow_pickle=False``): ``kind`` = "multilabel" | "graph" |
    "table"; sparse matrices as ``<M>_data`` (float32), ``<M>_indices``, ``<M>_indptr``,
    ``<M>_shape`` for M in X, Y, X_test, Y_test (multilabel) or A, X (graph);
    ``feature_names``, ``label_names``, ``class_names`` as unicode arrays; ``y`` int64 with
    -1 for unknown; ``name`` and ``source`` as 0-d unicode arrays. Tables store
    ``columns`` (unicode), one unicode array ``col_<i>`` per column (missing values as
    "<NA>"), ``labels`` int8 and ``label_name``. The file is written atomically
    (temporary file + ``os.replace``).
    """
    arrays = {"name": np.array(str(getattr(data, "name", "") or "")),
              "source": np.array(str(getattr(data, "source", "") or ""))}
    if isinstance(data, MultiLabelData):
        arrays["kind"] = np.array("multilabel")
        arrays.update(_sparse_parts("X", data.X))
        arrays.update(_sparse_parts("Y", data.Y))
        if data.X_test is not None:
            arrays.update(_sparse_parts("X_test", data.X_test))
        if data.Y_test is not None:
            arrays.update(_sparse_parts("Y_test", data.Y_test))
        if data.feature_names is not None:
            arrays["feature_names"] = _str_array(list(data.feature_names))
        if data.label_names is not None:
            arrays["label_names"] = _str_array(list(data.label_names))
    elif isinstance(data, GraphData):
        arrays["kind"] = np.array("graph")
        arrays.update(_sparse_parts("A", data.A))
        arrays.update(_sparse_parts("X", data.X))
        if data.y is not None:
            arrays["y"] = np.asarray(data.y, dtype=np.int64)
        if data.feature_names is not None:
            arrays["feature_names"] = _str_array(list(data.feature_names))
        if data.class_names is not None:
            arrays["class_names"] = _str_array(list(data.class_names))
    elif isinstance(data, CategoricalData):
        arrays["kind"] = np.array("table")
        cols = list(data.table.columns)
        arrays["columns"] = _str_array(cols)
        for i, c in enumerate(cols):
            s = data.table[c]
            arrays[f"col_{i}"] = _str_array(s.astype(object).where(s.notna(), "<NA>").tolist())
        arrays["labels"] = np.asarray(data.labels, dtype=np.int8)
        arrays["label_name"] = np.array(str(data.label_name))
    else:
        raise TypeError(f"save_npz: expected MultiLabelData, GraphData or CategoricalData, "
                        f"got {type(data).__name__}")
    _atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def _npz_str(z, key, name, default=""):
    if key not in z:
        return default
    a = z[key]
    if a.dtype.kind != "U" or a.ndim != 0:
        raise DatasetError(f"{key} must be a 0-d unicode array", path=name, field=key)
    return str(a[()])


def _npz_names(z, key, expected, name):
    if key not in z:
        return None
    a = z[key]
    if a.dtype.kind != "U":
        raise DatasetError(f"{key} must be a unicode array, got {a.dtype}", path=name, field=key)
    return _check_names(a, expected, name=name, what=key)


def _npz_sparse(z, prefix, name, *, binary=False, required=True):
    keys = [f"{prefix}_{p}" for p in ("data", "indices", "indptr", "shape")]
    present = [k in z for k in keys]
    if not any(present):
        if required:
            raise DatasetError(f"missing matrix {prefix} ({', '.join(keys)})", path=name,
                               field=prefix)
        return None
    if not all(present):
        miss = [k for k, p in zip(keys, present) if not p]
        raise DatasetError(f"matrix {prefix} is incomplete: missing {', '.join(miss)}",
                           path=name, field=prefix)
    return _check_csr_parts(z[keys[0]], z[keys[1]], z[keys[2]], z[keys[3]], name=name,
                            what=prefix, binary=binary)


def _load_npz_any(path_or_file):
    """Read an npz written by :func:`save_npz` into the matching container (validated)."""
    raw, name = _read_bytes(path_or_file)
    if not raw:
        raise DatasetError("empty file", path=name)
    try:
        zf = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"not a readable npz archive ({type(exc).__name__}: {exc})",
                           path=name) from exc
    if not isinstance(zf, np.lib.npyio.NpzFile):
        raise DatasetError("a single .npy array, not an npz archive", path=name)
    try:
        with zf:
            try:
                z = {k: zf[k] for k in zf.files}
            except Exception as exc:  # noqa: BLE001 - object arrays, corrupt members
                raise DatasetError(f"cannot read archive member ({type(exc).__name__}: "
                                   f"{exc})", path=name) from exc
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"corrupt npz archive ({type(exc).__name__}: {exc})",
                           path=name) from exc
    return _npz_to_container(z, name)


def _npz_to_container(z: dict, name: str):
    kind = _npz_str(z, "kind", name, default="")
    if not kind:
        # a bare scipy.sparse.save_npz file or unknown layout
        raise DatasetError("npz has no 'kind' entry (expected a featagg npz written by "
                           "save_npz)", path=name, field="kind")
    meta = dict(name=_npz_str(z, "name", name), source=_npz_str(z, "source", name))
    if kind == "multilabel":
        X = _npz_sparse(z, "X", name)
        Y = _npz_sparse(z, "Y", name, binary=True)
        if X.shape[0] != Y.shape[0]:
            raise DatasetError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}", path=name,
                               field="Y_shape")
        Xt = _npz_sparse(z, "X_test", name, required=False)
        Yt = _npz_sparse(z, "Y_test", name, binary=True, required=False)
        if (Xt is None) != (Yt is None):
            raise DatasetError("X_test and Y_test must be given together", path=name,
                               field="X_test" if Xt is None else "Y_test")
        if Xt is not None:
            if Xt.shape[1] != X.shape[1]:
                raise DatasetError(f"X_test has {Xt.shape[1]} columns, X has {X.shape[1]}",
                                   path=name, field="X_test_shape")
            if Yt.shape[1] != Y.shape[1]:
                raise DatasetError(f"Y_test has {Yt.shape[1]} columns, Y has {Y.shape[1]}",
                                   path=name, field="Y_test_shape")
            if Xt.shape[0] != Yt.shape[0]:
                raise DatasetError(f"X_test has {Xt.shape[0]} rows but Y_test has "
                                   f"{Yt.shape[0]}", path=name, field="Y_test_shape")
        return MultiLabelData(X=X, Y=Y, X_test=Xt, Y_test=Yt,
                              feature_names=_npz_names(z, "feature_names", X.shape[1], name),
                              label_names=_npz_names(z, "label_names", Y.shape[1], name),
                              **meta)
    if kind == "graph":
        A = _npz_sparse(z, "A", name)
        n = A.shape[0]
        if A.shape[1] != n:
            raise DatasetError(f"A must be square, got {A.shape}", path=name, field="A_shape")
        _check_symmetric(A, name=name, what="A")
        X = _npz_sparse(z, "X", name, required=False)
        if X is None:
            X = sp.csr_matrix((n, 0), dtype=np.float32)
        if X.shape[0] != n:
            raise DatasetError(f"X has {X.shape[0]} rows but the graph has {n} nodes",
                               path=name, field="X_shape")
        y = None
        if "y" in z:
            y = _check_classes(z["y"], n, name=name, what="y")
        class_names = None
        if "class_names" in z:
            k = int(y.max()) + 1 if y is not None and y.size and y.max() >= 0 else 0
            arr = z["class_names"]
            if arr.dtype.kind != "U" or arr.ndim != 1 or arr.shape[0] < k:
                raise DatasetError(f"class_names must be a unicode vector of at least {k} "
                                   f"names", path=name, field="class_names")
            class_names = [str(s) for s in arr.tolist()]
        return GraphData(A=A, X=X, y=y,
                         feature_names=_npz_names(z, "feature_names", X.shape[1], name),
                         class_names=class_names, **meta)
    if kind == "table":
        import pandas as pd
        if "columns" not in z or "labels" not in z:
            raise DatasetError("table npz needs 'columns' and 'labels'", path=name,
                               field="columns" if "columns" not in z else "labels")
        cols = z["columns"]
        if cols.dtype.kind != "U" or cols.ndim != 1:
            raise DatasetError("columns must be a unicode vector", path=name, field="columns")
        labels = np.asarray(z["labels"])
        if labels.ndim != 1 or not np.isin(labels, (0, 1)).all():
            raise DatasetError("labels must be a vector of 0/1", path=name, field="labels")
        table = {}
        for i, c in enumerate(cols.tolist()):
            key = f"col_{i}"
            if key not in z or z[key].dtype.kind != "U" or z[key].shape != labels.shape:
                raise DatasetError(f"column {c!r} missing or not a unicode vector of "
                                   f"{labels.shape[0]} values", path=name, field=key)
            table[str(c)] = z[key].astype(object)
        return CategoricalData(table=pd.DataFrame(table, index=pd.RangeIndex(len(labels))),
                               labels=labels.astype(np.int8),
                               label_name=_npz_str(z, "label_name", name, "label"), **meta)
    raise DatasetError(f"unknown kind {kind!r} (expected multilabel, graph or table)",
                       path=name, field="kind")


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


# ---------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------

def _suffix(name: str) -> str:
    base = os.path.basename(name).lower()
    for compound in (".parquet.brotli", ".parquet.gz", ".parquet.snappy"):
        if base.endswith(compound):
            return ".parquet"
    return os.path.splitext(base)[1]


def load_dataset(path_or_file, **kw) -> MultiLabelData:
    """Load a multi-label dataset (see module docstring for the formats)."""
    name = _source_name(path_or_file)
    ext = _suffix(name)
    if ext == ".npz":
        data = _load_npz_any(path_or_file)
        if not isinstance(data, MultiLabelData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a multi-label one "
                               f"(use load_graph/load_categorical)", path=name, field="kind")
        return data
    raise DatasetError(f"unsupported file type {ext!r}", path=name)


def load_graph(path_or_file, **kw) -> GraphData:
    """Load an attributed graph."""
    name = _source_name(path_or_file)
    ext = _suffix(name)
    if ext == ".npz":
        data = _load_npz_any(path_or_file)
        if not isinstance(data, GraphData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a graph", path=name,
                               field="kind")
        return data
    raise DatasetError(f"unsupported graph file type {ext!r}", path=name)


def load_categorical(path_or_file, label=None, **kw) -> CategoricalData:
    """Load a table of categorical columns with a binary label."""
    name = _source_name(path_or_file)
    ext = _suffix(name)
    if ext == ".npz":
        data = _load_npz_any(path_or_file)
        if not isinstance(data, CategoricalData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a table", path=name,
                               field="kind")
        return data
    raise DatasetError(f"unsupported table file type {ext!r}", path=name)
