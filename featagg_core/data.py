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
:class:`featagg_core._bounded.Budget` for the load). Compressed npz members, ``.mat``
variables and parquet row groups are charged to the budget from their declared sizes
*before* they are inflated, and only the members / variables a layout needs are read;
declared dimensions are checked against the budget and ``max_dim`` before anything of that
size is allocated. Every reader is linear in its input (edge-list names interned by a hash
table, node attributes in one pass, sets for duplicate checks, CSV by the ``csv`` module
into one block); XML is parsed by expat refusing DTDs and entities on the decoded
document, whatever its encoding.
"""
from __future__ import annotations

import contextvars
import hashlib
import io
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from ._bounded import Budget, open_zip, parse_xml_safely, read_npy_bytes, read_npy_member


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
    """Stable short hash of the content of arrays / sparse matrices / name lists (cache
    keys, artifacts). Names are part of what a dataset *is*: two datasets with the same
    numbers but different feature, label, class or column names get different
    fingerprints, so a cache keyed on the fingerprint never shows one session another
    session's names."""
    h = hashlib.sha1()
    for a in arrays:
        if a is None:
            h.update(b"none")
        elif isinstance(a, _Names):
            text = a.text.encode("utf-8", "surrogatepass")
            h.update(b"names%d:" % len(text))
            h.update(text)
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


class _Names:
    """A sequence of names (or cells) for :func:`_fingerprint`, encoded unambiguously as
    one JSON document (C speed, separators inside names cannot collide)."""
    __slots__ = ("text",)

    def __init__(self, values):
        import json
        self.text = json.dumps(list(values), ensure_ascii=False, default=str)


def _names_or_none(values):
    return None if values is None else _Names(values)


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
        """Hash of X, Y, the test part and the feature and label names."""
        return _fingerprint(self.X, self.Y, self.X_test, self.Y_test,
                            _names_or_none(self.feature_names),
                            _names_or_none(self.label_names))


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
        """Hash of A, X, y and the feature and class names."""
        return _fingerprint(self.A, self.X, self.y, _names_or_none(self.feature_names),
                            _names_or_none(self.class_names))


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
        """Hash of the labels, the label name, the column names and every cell (as text),
        column by column; one pass over the table's block, whatever its width."""
        cells = self.table.to_numpy(dtype=object).ravel(order="F")
        return _fingerprint(self.labels, _Names([str(self.label_name)]),
                            _Names(map(str, self.table.columns)),
                            _Names(map(str, cells.tolist())))


# ---------------------------------------------------------------------------
# input plumbing
# ---------------------------------------------------------------------------
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
    if raw[:3] == b"\xef\xbb\xbf":      # a UTF-8 byte-order mark (Windows editors)
        raw = raw[3:]
    _budget().add_input(len(raw))
    return raw, name


_NON_WS = re.compile(rb"[^ \t\r\n\v\f]")


def _blank(raw: bytes) -> bool:
    """True when ``raw`` is empty or only whitespace (without copying it)."""
    return _NON_WS.search(raw) is None


#: the budget of the load running in this context (thread / Streamlit session): set by
#: :func:`_guard` around a public reader, read by the internals through :func:`_budget`.
_LOAD_BUDGET: contextvars.ContextVar = contextvars.ContextVar("featagg_load_budget",
                                                              default=None)


def _budget() -> Budget:
    """The current load's :class:`~featagg_core._bounded.Budget` (a default one outside a
    public reader, e.g. when a private helper is called directly)."""
    b = _LOAD_BUDGET.get()
    return b if b is not None else Budget()


def _fail_for(name, **where):
    def fail(message):
        raise DatasetError(message, path=name, **where)
    return fail


def _guard(reader):
    """Make ``reader`` let nothing but DatasetError escape: an unexpected exception from
    numpy/pandas/scipy/networkx on a malformed input becomes a DatasetError naming the
    file (the original is chained as ``__cause__``).

    Also gives the reader the keyword-only options ``max_bytes`` (the most bytes the load
    may inflate from compressed members or allocate for declared sizes; default
    ``FEATAGG_MAX_LOAD_MB`` or 1 GiB, and never more than 50x the input beyond 64 MiB)
    and ``max_dim`` (the largest number of rows, columns, labels or nodes accepted,
    checked before anything of that size is allocated; default: the int32 index space).
    A reader called from inside another shares the outer call's budget."""
    import functools
    import inspect

    @functools.wraps(reader)
    def wrapped(path_or_file, *args, max_bytes=None, max_dim=None, **kw):
        outer = _LOAD_BUDGET.get()
        token = None
        try:
            if outer is None or max_bytes is not None or max_dim is not None:
                token = _LOAD_BUDGET.set(Budget(max_bytes, max_dim))
            return reader(path_or_file, *args, **kw)
        except DatasetError:
            raise
        except MemoryError as exc:
            raise DatasetError("not enough memory to load this file",
                               path=_source_name(path_or_file)) from exc
        except RecursionError as exc:
            raise DatasetError("the file nests too deeply to be read",
                               path=_source_name(path_or_file)) from exc
        except Exception as exc:  # noqa: BLE001 - the contract: only DatasetError escapes
            raise DatasetError(f"cannot read ({type(exc).__name__}: {exc})",
                               path=_source_name(path_or_file)) from exc
        finally:
            if token is not None:
                _LOAD_BUDGET.reset(token)

    sig = inspect.signature(reader)
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
             for n in ("max_bytes", "max_dim") if n not in sig.parameters]
    params = list(sig.parameters.values())
    var_kw = [p for p in params if p.kind == inspect.Parameter.VAR_KEYWORD]
    params = [p for p in params if p.kind != inspect.Parameter.VAR_KEYWORD] + extra + var_kw
    wrapped.__signature__ = sig.replace(parameters=params)
    return wrapped


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


# ---------------------------------------------------------------------------
# fingerprints: hashed once per container
# ---------------------------------------------------------------------------

def _memoize_fingerprint(cls) -> None:
    """Make ``cls.fingerprint`` hash the content once and then return the same value while
    the container holds the same objects.

    A fingerprint is a sha1 over every stored entry: ~0.3 s for 10^6 points with 1.5·10^7
    non-zeros, and the dashboard reads it many times per script run (page namespaces, the
    split, the run checks), which made a 10^6-row dataset's Data page take tens of seconds.
    The memo is keyed on the identity of the container's fields (and a sparse matrix's
    nnz): assigning a new matrix or name list recomputes it. Containers are treated as
    immutable once fingerprinted; changing the stored values of ``X`` in place is not seen.
    """
    from dataclasses import fields as _fields
    compute = cls.fingerprint.fget
    names = tuple(f.name for f in _fields(cls) if f.name not in ("kind", "name", "source"))

    def _key(self):
        out = []
        for n in names:
            v = getattr(self, n)
            out.append((v, getattr(v, "nnz", None) if sp.issparse(v) else None))
        return out

    def fingerprint(self) -> str:
        key = _key(self)
        memo = self.__dict__.get("_fingerprint_memo")
        if memo is not None and all(a is b and ka == kb for (a, ka), (b, kb)
                                    in zip(memo[0], key)):
            return memo[1]
        value = compute(self)
        self.__dict__["_fingerprint_memo"] = (key, value)
        return value

    fingerprint.__doc__ = ((compute.__doc__ or "Content hash.").rstrip()
                           + " Computed once while the fields hold the same objects.")
    cls.fingerprint = property(fingerprint)


for _cls in (MultiLabelData, GraphData):
    _memoize_fingerprint(_cls)
del _cls


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


class _NpzMembers:
    """Lazy, bounded view of an npz archive: ``key in z`` looks at member names only and
    ``z[key]`` reads that one ``key.npy`` member, its declared size charged to the load's
    budget before it is inflated (see :func:`featagg_core._bounded.read_npy_member`), so
    only the members a layout needs are ever inflated and none is unpickled."""

    def __init__(self, zf, name: str):
        self.zf, self.name = zf, name
        self.members = {m[:-4]: m for m in (i.filename for i in zf.infolist())
                        if m.endswith(".npy")}
        self.cache = {}

    def __contains__(self, key) -> bool:
        return key in self.members

    def __getitem__(self, key):
        if key not in self.cache:
            fail = _fail_for(self.name, field=key)
            self.cache[key] = read_npy_member(self.zf, self.members[key], _budget(),
                                              lambda m: fail(f"cannot read archive member "
                                                             f"({m})"), kinds="biufUS")
        return self.cache[key]

    def keys(self):
        return list(self.members)


def _open_npz(raw: bytes, name: str) -> _NpzMembers:
    if not raw:
        raise DatasetError("empty file", path=name)
    if raw[:6] == b"\x93NUMPY":
        raise DatasetError("a single .npy array, not an npz archive", path=name)
    zf = open_zip(raw, _fail_for(name), what="npz archive")
    return _NpzMembers(zf, name)


def _load_npz_any(path_or_file):
    """Read an npz written by :func:`save_npz` into the matching container (validated)."""
    raw, name = _read_bytes(path_or_file)
    z = _open_npz(raw, name)
    with z.zf:
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
# XC / svmlight text
# ---------------------------------------------------------------------------

_KERNEL_MESSAGES = {
    1: "expected 'index:value'",
    2: "negative feature index",
    3: "value is not a number",
    4: "NaN/inf value",
    5: "label is not a non-negative integer",
    6: "negative label",
    7: "index too large",
    8: "empty label in the label list (',,' or a trailing comma)",
    9: "sparse ARFF row must be enclosed in '{...}'",
    10: "wrong number of fields",
    11: "wrong number of fields (expected 'source target [weight]')",
    12: "node name longer than 256 bytes",
    13: "control character in a node name (binary file?)",
}


def _kernel_error(code: int, raw: bytes, name: str, line: int, pos: int) -> DatasetError:
    """Turn a kernel's (code, line, byte offset) into a DatasetError quoting the token."""
    pos = max(0, min(int(pos), len(raw)))
    msg = _KERNEL_MESSAGES.get(int(code), f"parse error {code}")
    if pos < len(raw) and raw[pos] >= 0x80:
        msg += f"; non-ASCII byte 0x{raw[pos]:02X} (wrong encoding? numbers must be ASCII)"
    else:
        end = pos
        while end < len(raw) and end - pos < 40 and raw[end] not in b" \t\r\n,{}":
            end += 1
        tok = raw[pos:end].decode("utf-8", "backslashreplace")
        msg += f", found {tok!r}" if tok else ", found end of line"
    return DatasetError(msg, path=name, line=int(line))


def _header_line(raw: bytes, name: str) -> tuple[str, int]:
    """First line as text and the offset of the byte after it."""
    nl = raw.find(b"\n")
    end = len(raw) if nl < 0 else nl + 1
    try:
        text = raw[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"header is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                           path=name, line=1) from None
    return text, end


def _int_header(text: str):
    """The ints of a header line, or None when it is not a header of plain integers."""
    parts = text.split()
    if not parts or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


class _Parsed:
    """Raw result of tokenising a sparse text file (before shape decisions)."""
    __slots__ = ("indptr", "indices", "values", "lab_ptr", "labels", "row_line", "n_rows",
                 "name")


def _tokenise(raw: bytes, name: str, start: int, first_line: int, allow_labels: bool,
              svmlight: bool) -> _Parsed:
    from ._kernels.parse import parse_sparse_lines
    buf = np.frombuffer(raw, dtype=np.uint8)
    nl, ncolon, ncomma = raw.count(b"\n", start), raw.count(b":", start), raw.count(b",", start)
    _budget().charge(40 * (nl + 2) + 16 * ncolon + 8 * ncomma, "parsing the rows",
                     _fail_for(name))
    (err, eline, epos, n_rows, indptr, indices, values, lab_ptr, labels, row_line, hard,
     n_hard) = parse_sparse_lines(buf, start, first_line, allow_labels, svmlight)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    out = _Parsed()
    out.n_rows = int(n_rows)
    out.indptr = indptr[:n_rows + 1]
    nnz = int(out.indptr[-1])
    out.indices = indices[:nnz]
    out.values = values[:nnz]
    out.lab_ptr = lab_ptr[:n_rows + 1]
    out.labels = labels[:int(out.lab_ptr[-1])]
    out.row_line = row_line[:n_rows]
    out.name = name
    # the rare numbers beyond the exact fast path: Python's correctly rounded float()
    _fill_hard(out.values, hard, n_hard, raw)
    return out


def _fill_hard(values: np.ndarray, hard: np.ndarray, n_hard: int, raw: bytes) -> None:
    """Convert the rare numbers the kernel left to the exact slow path (more than 15-16
    significant digits or a decimal exponent beyond +-22) with Python's correctly rounded
    ``float`` -- the kernel already checked their syntax."""
    for slot, a, b in hard[:int(n_hard)].tolist():
        values[slot] = float(raw[a:b])


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


def _line_of_entry(parsed: _Parsed, ptr: np.ndarray, pos: int) -> int:
    return int(parsed.row_line[_row_of_entry(ptr, pos)])


def _finish_matrix(parsed: _Parsed, ptr, idx, vals, n_cols: int, *, what: str,
                   binary: bool = False) -> sp.csr_matrix:
    """Range / finiteness / duplicate checks with line numbers, then a csr float32."""
    name = parsed.name
    _check_dim(n_cols, what=f"number of {what}s", name=name)
    _check_declared({f"{what}s": n_cols}, name=name)
    if idx.size:
        hi = int(idx.max())
        if hi >= n_cols:
            p = int(np.flatnonzero(idx >= n_cols)[0])
            raise DatasetError(f"{what} index {int(idx[p])} out of range (the header says "
                               f"{n_cols} {what}s)" if n_cols >= 0 else
                               f"{what} index {int(idx[p])} out of range", path=name,
                               line=_line_of_entry(parsed, ptr, p))
        if int(idx.min()) < 0:
            p = int(np.flatnonzero(idx < 0)[0])
            raise DatasetError(f"negative {what} index {int(idx[p])} (after the 1-based "
                               f"shift)", path=name, line=_line_of_entry(parsed, ptr, p))
    if vals is None:
        data = np.ones(idx.shape[0], np.float32)
    else:
        with np.errstate(over="ignore"):
            data = vals.astype(np.float32)
        bad = ~np.isfinite(data)
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"value {float(vals[p])!r} does not fit in float32 ({what} "
                               f"{int(idx[p])})", path=name,
                               line=_line_of_entry(parsed, ptr, p))
        if binary:
            nb = (data != 0) & (data != 1)
            if nb.any():
                p = int(np.flatnonzero(nb)[0])
                raise DatasetError(f"labels must be 0/1, found {float(vals[p])!r}", path=name,
                                   line=_line_of_entry(parsed, ptr, p))
    n = ptr.shape[0] - 1
    idx_dtype = np.int32 if max(n, n_cols, idx.shape[0]) < 2**31 - 1 else np.int64
    M = sp.csr_matrix((data, idx.astype(idx_dtype), ptr.astype(idx_dtype)),
                      shape=(n, n_cols))
    r, c = _first_duplicate(M.indptr, M.indices)
    if r >= 0:
        raise DatasetError(f"duplicate {what} index {int(c)} on the line", path=name,
                           line=int(parsed.row_line[r]))
    M.sort_indices()
    if data.size and not data.all():
        M.eliminate_zeros()
    return M


def _trim_rows(parsed: _Parsed, n_expected: int) -> None:
    """XC files: every line is a row, but blank lines after the last row are tolerated."""
    if parsed.n_rows > n_expected:
        extra_feat = parsed.indptr[-1] - parsed.indptr[n_expected]
        extra_lab = parsed.lab_ptr[-1] - parsed.lab_ptr[n_expected]
        if extra_feat or extra_lab:
            raise DatasetError(f"the header says {n_expected} rows but there are more",
                               path=parsed.name, line=int(parsed.row_line[n_expected]))
        parsed.n_rows = n_expected
        parsed.indptr = parsed.indptr[:n_expected + 1]
        parsed.lab_ptr = parsed.lab_ptr[:n_expected + 1]
        parsed.row_line = parsed.row_line[:n_expected]
    if parsed.n_rows < n_expected:
        last = int(parsed.row_line[-1]) if parsed.n_rows else 1
        raise DatasetError(f"truncated file: the header says {n_expected} rows, found "
                           f"{parsed.n_rows}", path=parsed.name, line=last)


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


def _stem(name: str) -> str:
    base = os.path.basename(str(name))
    low = base.lower()
    for ext in (".parquet.brotli", ".parquet.gz", ".parquet.snappy", ".parquet.zst"):
        if low.endswith(ext):
            return base[: -len(ext)]
    stem, ext = os.path.splitext(base)
    return stem if stem else base


@_guard
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


def _format_values(vals: np.ndarray):
    """Shortest round-trip text of float32 values (numpy's Dragon4 repr, computed once per
    distinct value); integers lose their '.0'. Returns (codes, bytes table, lengths)."""
    uniq, codes = np.unique(vals.astype(np.float32), return_inverse=True)
    if uniq.size == 0:
        return (np.zeros(0, np.int64), np.zeros((1, 1), np.uint8), np.zeros(1, np.int64))
    txt = uniq.astype("S")
    ends = np.char.endswith(txt, b".0")
    if ends.any():
        txt = txt.copy()
        txt[ends] = np.char.rstrip(np.char.rstrip(txt[ends], b"0"), b".")
    width = txt.dtype.itemsize
    table = np.frombuffer(txt.tobytes(), np.uint8).reshape(-1, width)
    lens = np.char.str_len(txt).astype(np.int64)
    return codes.astype(np.int64).ravel(), table, lens


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
    from ._kernels.parse import write_sparse_lines
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


# ---------------------------------------------------------------------------
# svmlight / libsvm multilabel
# ---------------------------------------------------------------------------

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
def load_svmlight(path_or_file, *, zero_based="auto", n_features=None,
                  n_labels=None) -> MultiLabelData:
    """Read svmlight/libsvm multilabel text (``l1,l2 i:v i:v ...``, no header; ``#``
    comments, blank lines and ``qid:`` are skipped as sklearn does) with the numba
    tokenizer of :func:`load_xc`. See :func:`_svmlight_assemble` for ``zero_based``.
    NaN/inf values are rejected (sklearn accepts them)."""
    raw, name = _read_bytes(path_or_file)
    (X, Y), = _svmlight_assemble([_svmlight_parse(raw, name)], zero_based, n_features,
                                 n_labels)
    return MultiLabelData(X=X, Y=Y, name=_stem(name), source=f"svmlight: {name}")


# ---------------------------------------------------------------------------
# MULAN ARFF (+ XML label header)
# ---------------------------------------------------------------------------
_DATA_RE = re.compile(rb"(?im)^[ \t]*@data[ \t]*\r?$")


def _reject_dtd(raw: bytes, name: str, what: str = "XML") -> None:
    """Refuse XML with a DTD or entity declarations (entity expansion, external
    entities) before any other XML parser sees it. The check is expat's own, on the
    decoded document, so it holds in every encoding (UTF-16 included); malformed XML is
    refused here too."""
    parse_xml_safely(raw, _fail_for(name), what=what)


def _parse_label_xml(xml, arff_name: str) -> list:
    """The ``<label name=...>`` names of a MULAN label file (nested ones included), in
    document order: one expat pass (DTDs refused), duplicates found with a set."""
    raw, name = _read_bytes(xml)
    if _blank(raw):
        raise DatasetError("empty label XML file", path=name)
    names, seen = [], set()

    def start(tag, attrs):
        if tag.rsplit("}", 1)[-1] != "label":
            return
        label = attrs.get("name")
        if label is None:
            raise DatasetError("a <label> element has no name attribute", path=name)
        if label in seen:
            raise DatasetError(f"label {label!r} is named twice", path=name)
        seen.add(label)
        names.append(label)

    parse_xml_safely(raw, _fail_for(name), start=start)
    if not names:
        raise DatasetError("no <label name=...> elements in the label XML", path=name)
    return names


def _arff_name(text: str, name: str, line: int) -> tuple[str, str]:
    """Split '<name> <rest>' where name may be quoted ('...' or "...", backslash escapes)."""
    text = text.lstrip()
    if not text:
        raise DatasetError("@attribute without a name", path=name, line=line)
    q = text[0]
    if q in "'\"":
        out, i = [], 1
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == q:
                return "".join(out), text[i + 1:]
            out.append(c)
            i += 1
        raise DatasetError("unterminated quoted attribute name", path=name, line=line)
    m = re.match(r"([^\s{]+)(.*)$", text, re.S)
    return m.group(1), m.group(2)


def _parse_arff_header(raw: bytes, name: str):
    """(relation, [(attr name, kind, nominal values)], data offset, data first line)."""
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    m = _DATA_RE.search(raw)
    if m is None:
        raise DatasetError("no @data line (not an ARFF file?)", path=name)
    try:
        head = raw[:m.start()].decode("utf-8")
    except UnicodeDecodeError as exc:
        ln = raw[:exc.start].count(b"\n") + 1
        raise DatasetError(f"header is not valid UTF-8 ({exc.reason})", path=name,
                           line=ln) from None
    relation, attrs = "", []
    seen = set()
    for ln, line in enumerate(head.split("\n"), start=1):
        s = line.strip()
        if not s or s.startswith("%"):
            continue
        low = s.lower()
        if low.startswith("@relation"):
            relation = s[9:].strip().strip("'\"")
        elif low.startswith("@attribute"):
            aname, rest = _arff_name(s[10:], name, ln)
            t = rest.strip()
            tl = t.lower()
            if tl in ("numeric", "real", "integer"):
                attrs.append((aname, "numeric", None))
            elif t.startswith("{"):
                if not t.endswith("}"):
                    raise DatasetError(f"attribute {aname!r}: nominal list not closed with "
                                       f"'}}'", path=name, line=ln)
                vals = [v.strip().strip("'\"") for v in t[1:-1].split(",")]
                attrs.append((aname, "nominal", vals))
            elif tl.startswith(("string", "date", "relational")):
                raise DatasetError(f"attribute {aname!r} has type {t.split()[0]}; only "
                                   f"numeric and numeric-coded nominal attributes are "
                                   f"supported", path=name, line=ln)
            else:
                raise DatasetError(f"attribute {aname!r}: unknown type {t[:30]!r}",
                                   path=name, line=ln)
            if aname in seen:
                raise DatasetError(f"attribute {aname!r} declared twice", path=name, line=ln)
            seen.add(aname)
        elif low.startswith("@end"):
            continue
        else:
            raise DatasetError(f"unexpected header line {s[:40]!r}", path=name, line=ln)
    if not attrs:
        raise DatasetError("no @attribute declarations", path=name)
    nl = raw.find(b"\n", m.end())
    start = len(raw) if nl < 0 else nl + 1
    first_line = raw[:m.start()].count(b"\n") + 2
    return relation, attrs, start, first_line


def _arff_label_mask(attrs, relation, name, xml, n_labels, path_or_file):
    names = [a[0] for a in attrs]
    n_attr = len(attrs)
    is_label = np.zeros(n_attr, bool)
    if xml is None and n_labels is None and isinstance(path_or_file, (str, os.PathLike)):
        p = os.fspath(path_or_file)
        folder, base = os.path.split(p)
        stem = os.path.splitext(base)[0]
        cands = [stem]
        m = re.match(r"^(.*?)[-_.](train|test|trn|tst)$", stem, re.I)
        if m:
            cands.append(m.group(1))
        for c in cands:
            q = os.path.join(folder, c + ".xml")
            if os.path.isfile(q):
                xml = q
                break
    if xml is not None:
        lab = _parse_label_xml(xml, name)
        pos = {a: i for i, a in enumerate(names)}
        missing = [l for l in lab if l not in pos]
        if missing:
            raise DatasetError(f"label {missing[0]!r} of the XML is not an attribute of the "
                               f"ARFF file", path=name, field=missing[0])
        is_label[[pos[l] for l in lab]] = True
    elif n_labels is not None:
        k = int(n_labels)
        if not 0 < k < n_attr:
            raise DatasetError(f"n_labels={k} but the file has {n_attr} attributes",
                               path=name)
        is_label[n_attr - k:] = True
    else:
        m = re.search(r"-C\s+(-?\d+)", relation)
        if m is None:
            raise DatasetError("cannot tell which attributes are labels: pass xml= (MULAN "
                               "label file) or n_labels= (the last attributes)", path=name)
        k = int(m.group(1))
        if k == 0 or abs(k) >= n_attr:
            raise DatasetError(f"MEKA option -C {k} does not fit {n_attr} attributes",
                               path=name, field="@relation")
        if k > 0:
            is_label[:k] = True
        else:
            is_label[n_attr + k:] = True
    for i in np.flatnonzero(is_label):
        a, kind, vals = attrs[i]
        if kind == "nominal" and not set(vals) <= {"0", "1"}:
            raise DatasetError(f"label attribute {a!r} must be binary {{0,1}}, declared "
                               f"{{{','.join(vals)}}}", path=name, field=a)
    for i in np.flatnonzero(~is_label):
        a, kind, vals = attrs[i]
        if kind == "nominal":
            for v in vals:
                try:
                    float(v)
                except ValueError:
                    raise DatasetError(f"nominal attribute {a!r} has non-numeric value "
                                       f"{v!r}; only numeric-coded nominal attributes are "
                                       f"supported", path=name, field=a) from None
    return is_label


def _parse_arff_rows(raw: bytes, name: str, start: int, first_line: int, n_attr: int):
    from ._kernels.parse import parse_arff_data
    buf = np.frombuffer(raw, dtype=np.uint8)
    nl, ncomma = raw.count(b"\n", start), raw.count(b",", start)
    _budget().charge(56 * (nl + 2) + 16 * ncomma, "parsing the @data rows", _fail_for(name))
    (err, eline, epos, n_rows, indptr, attr, values, row_line, n_fields, hard,
     n_hard) = parse_arff_data(buf, start, first_line)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    p = _Parsed()
    p.name = name
    p.n_rows = int(n_rows)
    p.indptr = indptr[:n_rows + 1]
    nnz = int(p.indptr[-1])
    p.indices = attr[:nnz]
    p.values = values[:nnz]
    p.row_line = row_line[:n_rows]
    _fill_hard(p.values, hard, n_hard, raw)
    nf = n_fields[:n_rows]
    bad = (nf >= 0) & (nf != n_attr)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise DatasetError(f"dense row has {int(nf[r])} fields, expected {n_attr} (one per "
                           f"attribute)", path=name, line=int(p.row_line[r]))
    if p.n_rows == 0:
        raise DatasetError("no data rows after @data", path=name)
    return p


@_guard
def load_arff(path_or_file, *, xml=None, n_labels=None):
    """Read a MULAN ARFF file (sparse ``{i v, ...}`` and dense rows) with its labels.

    Which attributes are labels: ``xml=`` (MULAN's label XML: every ``<label name=...>``,
    nested ones included); else ``n_labels=`` (the last attributes); else a ``<stem>.xml``
    next to a file given by path (``bibtex-train.arff`` also finds ``bibtex.xml``); else
    MEKA's ``-C n`` in the relation name. Labels may be anywhere among the attributes;
    label columns keep the attributes' order. Feature and label names are kept.
    A missing value ``?`` is read as absent (0) for a feature and is an error for a label.
    Nominal features must have numeric values (their numeric value is stored).
    """
    raw, name = _read_bytes(path_or_file)
    relation, attrs, start, first_line = _parse_arff_header(raw, name)
    is_label = _arff_label_mask(attrs, relation, name, xml, n_labels, path_or_file)
    n_attr = len(attrs)
    p = _parse_arff_rows(raw, name, start, first_line, n_attr)
    if p.indices.size:
        over = p.indices >= n_attr
        if over.any():
            q = int(np.flatnonzero(over)[0])
            raise DatasetError(f"attribute index {int(p.indices[q])} out of range (the header "
                               f"declares {n_attr} attributes)", path=name,
                               line=_line_of_entry(p, p.indptr, q))
    r, c = _first_duplicate(p.indptr, p.indices)
    if r >= 0:
        raise DatasetError(f"attribute index {int(c)} appears twice in the row", path=name,
                           line=int(p.row_line[r]))
    lab_entry = is_label[p.indices]
    miss = np.isnan(p.values)
    if (miss & lab_entry).any():
        q = int(np.flatnonzero(miss & lab_entry)[0])
        raise DatasetError(f"missing value '?' for label {attrs[int(p.indices[q])][0]!r}",
                           path=name, line=_line_of_entry(p, p.indptr, q))
    feat_col = np.cumsum(~is_label) - 1
    lab_col = np.cumsum(is_label) - 1
    rows = np.repeat(np.arange(p.n_rows), np.diff(p.indptr))

    n_feat, n_lab = int((~is_label).sum()), int(is_label.sum())

    def sub(mask, colmap, n_cols, binary, what):
        cnt = np.bincount(rows[mask], minlength=p.n_rows)
        ptr = np.concatenate([[0], np.cumsum(cnt)])
        vals = np.where(miss[mask], 0.0, p.values[mask])
        return _finish_matrix(p, ptr, colmap[p.indices[mask]], vals, n_cols, what=what,
                              binary=binary)

    X = sub(~lab_entry, feat_col, n_feat, False, "feature")
    Y = sub(lab_entry, lab_col, n_lab, True, "label")
    names = [a[0] for a in attrs]
    return MultiLabelData(X=X, Y=Y,
                          feature_names=[n for n, l in zip(names, is_label) if not l],
                          label_names=[n for n, l in zip(names, is_label) if l],
                          name=_stem(name), source=f"MULAN ARFF: {name}")


# ---------------------------------------------------------------------------
# load_dataset: dispatch by extension and content
# ---------------------------------------------------------------------------

def _suffix(name: str) -> str:
    """Lower-case extension; ``x.parquet.brotli`` and friends count as ``.parquet``."""
    base = os.path.basename(str(name)).lower()
    for compound in (".parquet.brotli", ".parquet.gz", ".parquet.snappy", ".parquet.zst"):
        if base.endswith(compound):
            return ".parquet"
    return os.path.splitext(base)[1]


def _sniff(raw: bytes, ext: str) -> str:
    """'npz' | 'arff' | 'xc' | 'xc_split' | 'svmlight' from the extension and first bytes."""
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        return "npz"
    if ext == ".arff":
        return "arff"
    head = raw[:4096].lstrip()
    first = head.split(b"\n", 1)[0].strip()
    if head[:1] == b"%" or first.lower().startswith(b"@relation"):
        return "arff"
    if ext in (".svm", ".libsvm", ".svmlight"):
        return "svmlight"
    parts = first.split()
    if parts and all(p.isdigit() for p in parts):
        if len(parts) == 3:
            return "xc"
        if len(parts) == 2:
            return "xc_split"
    return "svmlight"


@_guard
def load_dataset(path_or_file, *, test=None, labels_path=None, test_labels_path=None,
                 xml=None, n_labels=None, zero_based="auto", n_features=None,
                 format=None, name=None) -> MultiLabelData:
    """Load a multi-label dataset from a path or a binary file-like object with ``.name``.

    Formats (``format=`` forces one, else by extension and content): ``.npz``
    (:func:`save_npz`), MULAN ARFF (``.arff``, or text starting with ``%``/``@relation``;
    ``xml=``/``n_labels=`` as in :func:`load_arff`), XC text (first line ``N D L``; the
    split format ``N D`` needs ``labels_path=``), otherwise svmlight/libsvm multilabel
    (``zero_based``, ``n_features``, ``n_labels`` as in :func:`load_svmlight`).

    ``test=`` loads a second file of the same format into ``X_test``/``Y_test`` (with
    ``test_labels_path=`` for the XC split format); the two must agree on the number of
    features and labels (svmlight: shapes and the 1-based shift are decided jointly, as
    ``sklearn.datasets.load_svmlight_files`` does). Nothing but DatasetError escapes.
    """
    raw, src = _read_bytes(path_or_file)
    ext = _suffix(src)
    fmt = format or _sniff(raw, ext)
    if fmt == "npz":
        data = _load_npz_any(_raw_file(raw, src))
        if not isinstance(data, MultiLabelData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a multi-label one "
                               f"(use load_graph/load_categorical)", path=src,
                               field="kind")
        if test is not None:
            t = load_dataset(test, format="npz")
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt == "arff":
        data = load_arff(_raw_file(raw, src, path_or_file), xml=xml, n_labels=n_labels)
        if test is not None:
            t = load_arff(test, xml=xml, n_labels=n_labels)
            if t.feature_names != data.feature_names or t.label_names != data.label_names:
                raise DatasetError("the test file's attributes differ from the training "
                                   "file's", path=_source_name(test))
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt in ("xc", "xc_split"):
        data = _load_xc_raw(raw, src, labels_path)
        if test is not None:
            traw, tname = _read_bytes(test)
            t = _load_xc_raw(traw, tname, test_labels_path)
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt == "svmlight":
        parsed = [_svmlight_parse(raw, src)]
        if test is not None:
            traw, tname = _read_bytes(test)
            parsed.append(_svmlight_parse(traw, tname))
        mats = _svmlight_assemble(parsed, zero_based, n_features, n_labels)
        data = MultiLabelData(X=mats[0][0], Y=mats[0][1], name=_stem(src),
                              source=f"svmlight: {src}")
        if test is not None:
            data.X_test, data.Y_test = mats[1]
    else:
        raise DatasetError(f"unknown format {fmt!r} (npz, arff, xc, xc_split, svmlight)",
                           path=src)
    if data.X_test is not None:
        if data.X_test.shape[1] != data.X.shape[1] or data.Y_test.shape[1] != data.Y.shape[1]:
            raise DatasetError(f"test set has {data.X_test.shape[1]} features and "
                               f"{data.Y_test.shape[1]} labels, training set "
                               f"{data.X.shape[1]} and {data.Y.shape[1]}",
                               path=_source_name(test))
    if name is not None:
        data.name = name
    return data


class _NamedBytes(io.BytesIO):
    """In-memory copy of an input that keeps its name (for messages and sniffing)."""

    def __init__(self, raw: bytes, name: str):
        super().__init__(raw)
        self.name = name


def _raw_file(raw: bytes, name: str, original=None):
    """The original path when there is one (so neighbours such as ``<stem>.xml`` can be
    found), else an in-memory named file over ``raw``."""
    if isinstance(original, (str, os.PathLike)):
        return original
    return _NamedBytes(raw, name)


def warmup() -> None:
    """Compile (or load from cache) the parsing kernels on tiny inputs."""
    from ._kernels import parse as k
    buf = np.frombuffer(b"1 0:1.5 2:2\n\n0,1 1:3e-1\n", np.uint8)
    k.parse_sparse_lines(buf, 0, 1, True, True)
    k.parse_sparse_lines(buf, 0, 1, True, False)
    k.parse_arff_data(np.frombuffer(b"{0 1,2 0.5}\n1,0,2\n", np.uint8), 0, 1)
    codes, table, lens = _format_values(np.array([1.5], np.float32))
    ip = np.array([0, 1], np.int64)
    k.write_sparse_lines(ip, np.array([0], np.int64), codes, table, lens, ip,
                         np.array([0], np.int64), True)
    if hasattr(k, "parse_edge_lines"):
        eb = np.frombuffer(b"a b 1\n", np.uint8)
        out = k.parse_edge_lines(eb, 0, 1)
        k.intern_tokens(eb, out[4][:2], out[5][:2], 1)


# ---------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------

_HEADER_WORDS = {"source", "target", "src", "dst", "from", "to", "weight", "u", "v", "w",
                 "node1", "node2", "id1", "id2", "i", "j", "head", "tail", "node_1", "node_2"}


def _undirected(rows, cols, w, n: int, *, self_loops: bool, name: str,
                lines=None) -> sp.csr_matrix:
    """Symmetric csr float32 from (possibly directed, repeated) weighted edges.

    Rule: an edge given in either direction, once or several times, becomes one
    undirected edge whose weight is the largest one given (so ``u v`` + ``v u`` is not
    doubled). Self-loops are dropped unless ``self_loops``. Weights must be finite and
    non-negative; zero weights mean no edge.
    """
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    w = np.asarray(w, np.float64)
    if w.size:
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            q = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"edge weight {float(w[q])!r} is not a finite non-negative number",
                               path=name, line=None if lines is None else int(lines[q]))
    if not self_loops:
        keep = rows != cols
        rows, cols, w = rows[keep], cols[keep], w[keep]
    r = np.concatenate([rows, cols])
    c = np.concatenate([cols, rows])
    ww = np.concatenate([w, w])
    if r.size:
        key = r * n + c
        order = np.argsort(key, kind="stable")
        key, ww = key[order], ww[order]
        first = np.concatenate([[True], key[1:] != key[:-1]])
        starts = np.flatnonzero(first)
        wmax = np.maximum.reduceat(ww, starts)
        key = key[starts]
        r, c, ww = key // n, key % n, wmax
    with np.errstate(over="ignore"):
        data = ww.astype(np.float32)
    if data.size and not np.isfinite(data).all():
        raise DatasetError("an edge weight does not fit in float32", path=name)
    A = sp.csr_matrix((data, (r, c)), shape=(n, n), dtype=np.float32)
    A.eliminate_zeros()
    A.sort_indices()
    return A


def _parse_edge_list(raw: bytes, name: str, node_ids: str):
    """-> (rows, cols, weights, lines, n_nodes, node_names or None)."""
    from ._kernels.parse import intern_tokens, parse_edge_lines
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    if node_ids not in ("auto", "int", "appearance"):
        raise ValueError(f"node_ids must be 'auto', 'int' or 'appearance', got {node_ids!r}")
    # a header line such as "source,target,weight" is skipped
    start, first_line = 0, 1
    while True:
        nl = raw.find(b"\n", start)
        end = len(raw) if nl < 0 else nl
        s = raw[start:end].strip()
        if s and not s.startswith((b"#", b"%")):
            words = s.replace(b",", b" ").lower().split()
            try:
                is_header = all(wd.decode("ascii").strip("'\"") in _HEADER_WORDS
                                for wd in words)
            except UnicodeDecodeError:
                is_header = False
            if is_header and 2 <= len(words) <= 3:
                start, first_line = end + 1, first_line + 1
            break
        if nl < 0:
            break
        start, first_line = nl + 1, first_line + 1
    buf = np.frombuffer(raw, np.uint8)
    # the tokeniser allocates 64 bytes per line (two name spans, two integer ids, a weight
    # and a line number), the interning below 48 more
    _budget().charge(112 * (raw.count(b"\n", start) + 1), "parsing the edge list",
                     _fail_for(name))
    (err, eline, epos, ne, ts, te, w, eline_arr, all_int, int_id, hard,
     n_hard) = parse_edge_lines(buf, min(start, len(raw)), first_line)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    if ne == 0:
        raise DatasetError("no edges in the file", path=name)
    ts, te, w, lines = ts[:2 * ne], te[:2 * ne], w[:ne], eline_arr[:ne]
    _fill_hard(w, hard, n_hard, raw)
    if node_ids == "int" and not all_int:
        raise DatasetError("node_ids='int' but a node name is not a non-negative integer",
                           path=name)
    use_int = all_int and node_ids != "appearance"
    if use_int:
        ids = int_id[:2 * ne]
        n = int(ids.max()) + 1
        if node_ids == "auto" and n > 2 * np.unique(ids).size + 1:
            use_int = False          # sparse integer ids (e.g. SNAP's): number by appearance
        elif n > _MAX_DIM:
            raise DatasetError(f"node id {n - 1} exceeds the supported maximum "
                               f"{_MAX_DIM - 1}", path=name)
        else:
            _check_declared({"nodes": n}, name=name)
    if use_int:
        names = None
    else:
        # numbered by first appearance through a hash table: memory O(edges), never
        # O(edges x longest name) as a fixed-width string array would be
        ids, first = intern_tokens(buf, ts, te, int.from_bytes(os.urandom(8), "little") >> 1)
        n = int(first.size)
        try:
            names = [raw[a:b].decode("utf-8") for a, b in zip(ts[first].tolist(),
                                                               te[first].tolist())]
        except UnicodeDecodeError:
            raise DatasetError("a node name is not valid UTF-8", path=name) from None
    return ids[0::2], ids[1::2], w, lines, n, names


def _classes_from_values(values, name: str, what: str):
    """Map class values to 0..k-1 in sorted order (numeric sort when all are numbers);
    returns (y int64, class_names)."""
    vals = np.asarray(values)
    if vals.dtype.kind in "fc" and not np.isfinite(vals).all():
        raise DatasetError(f"{what}: NaN/inf class value", path=name, field=what)
    if vals.dtype.kind == "f" and (vals == np.round(vals)).all():
        vals = vals.astype(np.int64)
    uniq, y = np.unique(vals, return_inverse=True)
    return y.ravel().astype(np.int64), [str(u) for u in uniq.tolist()]


def _matrix_from_any(obj, n: int, name: str, what: str) -> sp.csr_matrix:
    """Node features given as an array/sparse matrix, or a file: .npz (scipy.sparse
    ``save_npz`` layout), .npy (dense, no pickles), or text (XC split ``N D`` features file
    or svmlight lines without labels), one row per node in node order."""
    if sp.issparse(obj) or isinstance(obj, np.ndarray):
        M = sp.csr_matrix(obj)
        M = _check_csr_parts(M.data, M.indices, M.indptr, M.shape, name=name, what=what)
    else:
        raw, fname = _read_bytes(obj)
        ext = _suffix(fname)
        if ext == ".npz" or raw[:4] == b"PK\x03\x04":
            parts = _open_npz(raw, fname)
            with parts.zf:
                if "kind" in parts:
                    g = _npz_to_container(parts, fname)
                    M = g.X
                else:
                    need = ("data", "indices", "indptr", "shape")
                    if not all(k in parts for k in need):
                        raise DatasetError("npz features need data/indices/indptr/shape "
                                           "(scipy.sparse.save_npz)", path=fname)
                    fmt = parts["format"].item() if "format" in parts else "csr"
                    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
                    if fmt != "csr":
                        raise DatasetError(f"npz features must be csr, got {fmt}", path=fname)
                    M = _check_csr_parts(parts["data"], parts["indices"], parts["indptr"],
                                         parts["shape"], name=fname, what=what)
        elif ext == ".npy" or raw[:6] == b"\x93NUMPY":
            arr = read_npy_bytes(raw, _budget(), _fail_for(fname), kinds="biuf")
            if arr.ndim != 2:
                raise DatasetError(f"features must be a 2-D numeric array, got {arr.dtype} "
                                   f"{arr.shape}", path=fname)
            _check_declared({"rows": arr.shape[0], "features": arr.shape[1]}, name=fname)
            M = sp.csr_matrix(arr)
            M = _check_csr_parts(M.data, M.indices, M.indptr, M.shape, name=fname, what=what)
        else:
            h = _int_header(_header_line(raw, fname)[0]) if not _blank(raw) else None
            if h is not None and len(h) == 2:
                (nn, d), start = _xc_header(raw, fname, (2,))
                p = _tokenise(raw, fname, start, 2, False, False)
                _trim_rows(p, nn)
                M = _finish_matrix(p, p.indptr, p.indices, p.values, d, what="feature")
            else:
                if _blank(raw):
                    raise DatasetError("empty file", path=fname)
                p = _tokenise(raw, fname, 0, 1, False, True)
                d = int(p.indices.max()) + 1 if p.indices.size else 0
                M = _finish_matrix(p, p.indptr, p.indices, p.values, d, what="feature")
        name = fname
    if M.shape[0] != n:
        raise DatasetError(f"{what} has {M.shape[0]} rows but the graph has {n} nodes",
                           path=name, field=what)
    return M


def _labels_from_any(obj, n: int, node_names, name: str):
    """Node classes given as a sequence, or a text file of one class per line (node order)
    or ``node class`` lines (node names as in the edge list; unlisted nodes get -1)."""
    if not isinstance(obj, (str, os.PathLike)) and not hasattr(obj, "read"):
        vals = np.asarray(obj)
        if vals.ndim != 1 or vals.shape[0] != n:
            raise DatasetError(f"labels must have one entry per node ({n}), got shape "
                               f"{vals.shape}", path=name, field="labels")
        return _classes_from_values(vals, name, "labels")
    raw, fname = _read_bytes(obj)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not valid UTF-8 ({exc.reason})", path=fname,
                           line=raw[:exc.start].count(b"\n") + 1) from None
    rows = [(i + 1, ln.replace(",", " ").split()) for i, ln in enumerate(text.split("\n"))]
    rows = [(i, t) for i, t in rows if t and not t[0].startswith(("#", "%"))]
    if not rows:
        raise DatasetError("empty labels file", path=fname)
    widths = {len(t) for _, t in rows}
    if widths == {1}:
        if len(rows) != n:
            raise DatasetError(f"{len(rows)} classes for {n} nodes", path=fname,
                               line=rows[-1][0])
        vals = np.array([t[0] for _, t in rows])
        try:
            vals = vals.astype(np.int64)
        except ValueError:
            pass
        return _classes_from_values(vals, fname, "labels")
    if widths != {2}:
        i, t = next((i, t) for i, t in rows if len(t) != 2)
        raise DatasetError(f"expected 'node class' (2 fields), found {len(t)}", path=fname,
                           line=i)
    if node_names is not None:
        index = {s: k for k, s in enumerate(node_names)}
    else:
        index = None
    nodes = np.empty(len(rows), np.int64)
    for k, (i, t) in enumerate(rows):
        if index is not None:
            if t[0] not in index:
                raise DatasetError(f"node {t[0]!r} is not in the graph", path=fname, line=i)
            nodes[k] = index[t[0]]
        else:
            if not t[0].isdigit() or int(t[0]) >= n:
                raise DatasetError(f"node {t[0]!r} is not a node id in [0, {n})", path=fname,
                                   line=i)
            nodes[k] = int(t[0])
    if np.unique(nodes).size != nodes.size:
        raise DatasetError("a node is given two classes", path=fname)
    vals = np.array([t[1] for _, t in rows])
    try:
        vals = vals.astype(np.int64)
    except ValueError:
        pass
    codes, names = _classes_from_values(vals, fname, "labels")
    y = np.full(n, -1, np.int64)
    y[nodes] = codes
    return y, names


def _graph_from_networkx(G, name: str, self_loops: bool, class_attr):
    """A, X (numeric node attributes, one column per attribute name, sorted), y."""
    nodes = list(G.nodes())
    n = len(nodes)
    if n == 0:
        raise DatasetError("the graph has no nodes", path=name)
    index = {v: i for i, v in enumerate(nodes)}
    es = list(G.edges(data=True))
    r = np.fromiter((index[u] for u, _, _ in es), np.int64, len(es))
    c = np.fromiter((index[v] for _, v, _ in es), np.int64, len(es))
    w = []
    for k, (_, _, a) in enumerate(es):
        x = a.get("weight", 1.0)
        try:
            w.append(float(x))
        except (TypeError, ValueError):
            raise DatasetError(f"edge weight {x!r} is not a number", path=name,
                               field="weight") from None
    A = _undirected(r, c, np.asarray(w, np.float64), n, self_loops=self_loops, name=name)
    attrs = [a for _, a in G.nodes(data=True)]
    keys = sorted({k for a in attrs for k in a}, key=str)
    if class_attr is None:
        class_attr = next((k for k in ("class", "y", "group", "community") if k in keys), None)
    elif class_attr not in keys:
        raise DatasetError(f"no node attribute {class_attr!r}", path=name, field=class_attr)
    # one pass over the nodes' attribute dicts (never one pass per attribute: a file whose
    # every node carries its own attribute would make that quadratic); a column is kept
    # when every value it has is a number (missing = 0)
    skip = {"label", "id", "name", class_attr}
    entries = {}            # key -> [rows, values] while every value is numeric, else None
    for i, a in enumerate(attrs):
        for k, x in a.items():
            if k in skip:
                continue
            e = entries.get(k, ())
            if e is None:
                continue
            if x is not None and not isinstance(x, (int, float, np.integer, np.floating)):
                entries[k] = None
                continue
            if e == ():
                e = entries[k] = [[], []]
            if x is not None:
                e[0].append(i)
                e[1].append(float(x))
    cols, rows_, vals, fnames = [], [], [], []
    for k in keys:
        e = entries.get(k)
        if not e:
            continue
        arr = np.asarray(e[1], np.float64)
        if not np.isfinite(arr).all():
            raise DatasetError(f"node attribute {k!r} has NaN/inf", path=name, field=str(k))
        nz = arr != 0
        rows_.append(np.asarray(e[0], np.int64)[nz])
        cols.append(np.full(int(nz.sum()), len(fnames)))
        vals.append(arr[nz])
        fnames.append(str(k))
    if fnames:
        X = sp.csr_matrix((np.concatenate(vals).astype(np.float32),
                           (np.concatenate(rows_), np.concatenate(cols))),
                          shape=(n, len(fnames)))
    else:
        X = sp.csr_matrix((n, 0), dtype=np.float32)
    y = class_names = None
    if class_attr is not None:
        vals_ = [G.nodes[v].get(class_attr) for v in nodes]
        known = np.array([v is not None for v in vals_])
        if known.any():
            kv = np.array([str(v) for v in vals_ if v is not None])
            try:
                kv = kv.astype(np.int64)
            except ValueError:
                pass
            codes, class_names = _classes_from_values(kv, name, class_attr)
            y = np.full(n, -1, np.int64)
            y[known] = codes
    return A, X, y, fnames or None, class_names


def _load_graphml(raw: bytes, name: str, self_loops: bool, class_attr):
    import networkx as nx
    _reject_dtd(raw, name, "GraphML")
    try:
        G = nx.read_graphml(io.BytesIO(raw))
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - networkx/ElementTree raise many kinds
        raise DatasetError(f"malformed GraphML ({type(exc).__name__}: {exc})",
                           path=name) from None
    return _graph_from_networkx(G, name, self_loops, class_attr)


def _load_gml(raw: bytes, name: str, self_loops: bool, class_attr):
    import networkx as nx
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not valid UTF-8 ({exc.reason})", path=name,
                           line=raw[:exc.start].count(b"\n") + 1) from None
    try:
        G = nx.parse_gml(text.splitlines(), label=None)
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"malformed GML ({type(exc).__name__}: {exc})",
                           path=name) from None
    return _graph_from_networkx(G, name, self_loops, class_attr)


_MAT_KEYS = {
    "A": ("network", "a", "adj", "adjacency", "net", "graph", "w"),
    "X": ("attributes", "features", "x", "attr", "feature"),
    "y": ("group", "label", "labels", "y", "gnd", "class", "classes"),
}


_MI_DTYPE = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8",
             12: "i8", 13: "u8"}
_MX_NUMERIC = set(range(6, 16))     # double, single, int8 ... uint64
_MX_SPARSE = 5
_MX_KIND = {1: "cell array", 2: "struct", 3: "object", 4: "char array", 16: "function",
            17: "opaque object"}


def _mat_sub(buf: bytes, off: int, endian: str, name: str, var: str):
    """One sub-element of a MAT v5 matrix: (type, data bytes, next offset), bounds-checked."""
    import struct
    if off + 8 > len(buf):
        raise DatasetError("truncated matrix element", path=name, field=var)
    w, n = struct.unpack_from(endian + "II", buf, off)
    if w >> 16:                                   # small data element: 4 bytes of payload
        typ, n = w & 0xFFFF, w >> 16
        if n > 4:
            raise DatasetError("corrupt small data element", path=name, field=var)
        return typ, buf[off + 4:off + 4 + n], off + 8
    typ = w
    end = off + 8 + n
    if end > len(buf):
        raise DatasetError("sub-element runs past the end of its matrix", path=name,
                           field=var)
    return typ, buf[off + 8:end], end + (-n % 8)


def _mat_array(typ: int, data: bytes, endian: str, name: str, var: str, what: str):
    if typ not in _MI_DTYPE:
        raise DatasetError(f"{what}: unsupported data type {typ}", path=name, field=var)
    dt = np.dtype(_MI_DTYPE[typ]).newbyteorder(endian)
    if len(data) % dt.itemsize:
        raise DatasetError(f"{what}: byte count is not a multiple of the item size",
                           path=name, field=var)
    return np.frombuffer(data, dt)


def _mat_matrix_header(body: bytes, endian: str, name: str):
    """(variable name, class, dims, is_complex, offset after the name) of a miMATRIX body;
    only its first bytes are needed (the name comes before the data)."""
    import struct
    typ, data, off = _mat_sub(body, 0, endian, name, "?")
    if typ != 6 or len(data) != 8:
        raise DatasetError("matrix without array flags", path=name)
    flags, _nzmax = struct.unpack(endian + "II", data)
    cls, is_complex = flags & 0xFF, bool(flags & 0x800)
    typ, data, off = _mat_sub(body, off, endian, name, "?")
    dims = _mat_array(typ, data, endian, name, "?", "dimensions")
    typ, data, off = _mat_sub(body, off, endian, name, "?")
    try:
        var = bytes(data).decode("ascii")
    except UnicodeDecodeError:
        raise DatasetError("variable name is not ASCII", path=name) from None
    return var, cls, dims, is_complex, off


def _mat_check_matrix(body: bytes, endian: str, name: str):
    """(variable name, class, problem or None) for one miMATRIX body. Numeric and sparse
    matrices are checked completely: dimensions against the number of values, and for
    sparse ones row indices within range and column pointers non-decreasing and within
    the number of stored entries -- scipy.io's C reader trusts these and can crash on a
    corrupt file, so nothing reaches it unchecked. Declared dimensions are checked
    against the load's budget (see :func:`_check_declared`)."""
    var, cls, dims, is_complex, off = _mat_matrix_header(body, endian, name)
    if dims.size < 2 or (dims < 0).any():
        return var, cls, f"bad dimensions {dims.tolist()}"
    if (dims.astype(np.int64) > _MAX_DIM).any():
        return var, cls, f"dimensions {dims.tolist()} exceed {_MAX_DIM}"
    if cls not in _MX_NUMERIC and cls != _MX_SPARSE:
        return var, cls, None
    _check_declared({f"{var} rows": int(dims[0]),
                     f"{var} columns": int(np.prod(dims[1:].astype(np.int64)))},
                    name=name, field=var)
    n_parts = 2 if is_complex else 1
    if cls == _MX_SPARSE:
        if dims.size != 2:
            return var, cls, "a sparse matrix must be 2-D"
        M, N = int(dims[0]), int(dims[1])
        typ, data, off = _mat_sub(body, off, endian, name, var)
        ir = _mat_array(typ, data, endian, name, var, "row indices")
        typ, data, off = _mat_sub(body, off, endian, name, var)
        jc = _mat_array(typ, data, endian, name, var, "column pointers")
        if jc.size < N + 1:
            return var, cls, f"{jc.size} column pointers for {N} columns"
        jc = jc[:N + 1].astype(np.int64)
        if jc[0] != 0 or (np.diff(jc) < 0).any() or jc[-1] > ir.size:
            return var, cls, "column pointers are not a valid sparse structure"
        nnz = int(jc[-1])
        if nnz and (ir[:nnz].min() < 0 or ir[:nnz].max() >= M):
            return var, cls, "row index out of range"
        for _ in range(n_parts):
            typ, data, off = _mat_sub(body, off, endian, name, var)
            pr = _mat_array(typ, data, endian, name, var, "values")
            if pr.size < nnz:
                return var, cls, f"{pr.size} values for {nnz} entries"
        # what the graph is built from: (row, column, value) per entry, then a sort
        _budget().charge(_MAT_BYTES_PER_VALUE * nnz, f"matrix {var}", _fail_for(name, field=var))
        return var, cls, None
    count = int(np.prod(dims.astype(np.int64)))
    for _ in range(n_parts):
        typ, data, off = _mat_sub(body, off, endian, name, var)
        pr = _mat_array(typ, data, endian, name, var, "values")
        if pr.size != count:
            return var, cls, f"{pr.size} values for dimensions {dims.tolist()}"
    # a dense matrix is read as an array, then turned into (row, column, value) entries
    _budget().charge(_MAT_BYTES_PER_VALUE * count, f"matrix {var}", _fail_for(name, field=var))
    return var, cls, None


#: bytes charged per stored value of a chosen .mat variable on top of its own bytes: scipy's
#: copy, the (row, column, value) triplets and the sort that builds the graph from them
_MAT_BYTES_PER_VALUE = 32
_MAT_PEEK = 4096


def _mat_variables(raw: bytes, name: str):
    """Walk a MAT v5/v7 file: {variable: (class, element start, element end, compressed)}.

    Only the first bytes of a compressed element are inflated (to read its variable name
    and class); whole elements are inflated later, for the variables a graph needs, by
    :func:`_mat_element_body`."""
    import struct
    import zlib
    if len(raw) < 128:
        raise DatasetError("too short for a MATLAB file", path=name)
    endian = {b"IM": "<", b"MI": ">"}.get(raw[126:128])
    if endian is None:
        raise DatasetError("not a MATLAB v5/v7 file (v4 and v7.3/HDF5 are not supported)",
                           path=name)
    out, pos = {}, 128
    while pos < len(raw):
        if pos + 8 > len(raw):
            raise DatasetError(f"truncated data element at byte {pos}", path=name)
        typ, n = struct.unpack_from(endian + "II", raw, pos)
        end = pos + 8 + n
        if end > len(raw):
            raise DatasetError(f"data element at byte {pos} runs past the end of the file",
                               path=name)
        if typ == 15:
            try:
                head = zlib.decompressobj().decompress(raw[pos + 8:end], _MAT_PEEK)
            except zlib.error as exc:
                raise DatasetError(f"corrupt compressed element at byte {pos} ({exc})",
                                   path=name) from None
            if len(head) < 8:
                raise DatasetError(f"corrupt compressed element at byte {pos}", path=name)
            ityp, _inn = struct.unpack_from(endian + "II", head, 0)
            if ityp != 14:
                raise DatasetError(f"corrupt compressed element at byte {pos}", path=name)
            mhead = head[8:]
        elif typ == 14:
            mhead = raw[pos + 8:min(end, pos + 8 + _MAT_PEEK)]
        else:
            raise DatasetError(f"unexpected data element type {typ} at byte {pos}",
                               path=name)
        if mhead:
            try:
                var, cls, _dims, _cplx, _off = _mat_matrix_header(mhead, endian, name)
            except DatasetError as exc:
                raise DatasetError(f"matrix at byte {pos}: {exc.reason} (or a variable name "
                                   "too long to read)", path=name) from None
            out[var] = (cls, pos, end, typ == 15)
        pos = end
    return out, endian


def _mat_element_body(raw: bytes, pos: int, end: int, compressed: bool, endian: str,
                      name: str, var: str) -> bytes:
    """The miMATRIX body of the element at ``raw[pos:end]``; a compressed one is inflated
    only after its declared size was charged to the load's budget, and never beyond it."""
    import struct
    import zlib
    if not compressed:
        return raw[pos + 8:end]
    d = zlib.decompressobj()
    try:
        head = d.decompress(raw[pos + 8:end], 8)
        _ityp, inn = struct.unpack_from(endian + "II", head, 0)
        _budget().charge(inn, f"variable {var} (compressed)", _fail_for(name, field=var))
        body = d.decompress(d.unconsumed_tail, inn)
    except zlib.error as exc:
        raise DatasetError(f"corrupt compressed element at byte {pos} ({exc})",
                           path=name, field=var) from None
    if len(body) != inn:
        raise DatasetError(f"compressed element at byte {pos} holds {len(body)} bytes but "
                           f"declares {inn}", path=name, field=var)
    return body


def _load_mat(raw: bytes, name: str, self_loops: bool):
    """Read the graph variables of a MAT v5/v7 file. The file's structure is walked and
    the chosen variables validated first (see ``_mat_check_matrix``); only then are those
    elements handed to ``scipy.io.loadmat`` (which never unpickles)."""
    import scipy.io
    if raw[:128].find(b"MATLAB 7.3") >= 0 or raw[:8] == b"\x89HDF\r\n\x1a\n":
        raise DatasetError("MATLAB v7.3 (HDF5) files are not supported: save with -v7",
                           path=name)
    variables, endian = _mat_variables(raw, name)
    lower = {k.lower(): k for k in variables}

    def pick(role):
        for cand in _MAT_KEYS[role]:
            if cand in lower:
                return lower[cand]
        return None

    ka, kx, ky = pick("A"), pick("X"), pick("y")
    if ka is None:
        raise DatasetError(f"no adjacency matrix: expected one of "
                           f"{', '.join(_MAT_KEYS['A'])} (any case), found "
                           f"{', '.join(sorted(lower.values())[:20]) or 'nothing'}", path=name)
    chosen = [k for k in (ka, kx, ky) if k is not None]
    import struct
    elements = []
    for k in chosen:
        cls, pos, end, compressed = variables[k]
        if cls in _MX_KIND:
            raise DatasetError(f"{k} is a {_MX_KIND[cls]}, not a numeric matrix", path=name,
                               field=k)
        if cls not in _MX_NUMERIC and cls != _MX_SPARSE:
            raise DatasetError(f"{k} has unsupported MATLAB class {cls}", path=name, field=k)
        body = _mat_element_body(raw, pos, end, compressed, endian, name, k)
        _var, _cls, problem = _mat_check_matrix(body, endian, name)
        if problem:
            raise DatasetError(f"{k}: {problem}", path=name, field=k)
        # handed to scipy uncompressed, so it does not inflate the element a second time
        elements.append(struct.pack(endian + "II", 14, len(body)) + body
                        + b"\0" * (-len(body) % 8))
    clean = raw[:128] + b"".join(elements)
    del elements
    try:
        m = scipy.io.loadmat(io.BytesIO(clean), squeeze_me=False, struct_as_record=True)
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on bad input
        raise DatasetError(f"not a readable MATLAB file ({type(exc).__name__}: {exc})",
                           path=name) from None
    del clean
    missing = [k for k in chosen if k not in m]
    if missing:
        raise DatasetError(f"variable {missing[0]} could not be read", path=name,
                           field=missing[0])

    def numeric(key):
        v = m[key]
        if sp.issparse(v):
            return sp.csr_matrix(v)
        v = np.asarray(v)
        if v.dtype == object or not (np.issubdtype(v.dtype, np.number) or v.dtype == bool):
            raise DatasetError(f"{key} is not a numeric matrix ({v.dtype})", path=name,
                               field=key)
        if v.ndim != 2:
            raise DatasetError(f"{key} must be 2-D, got shape {v.shape}", path=name,
                               field=key)
        return v

    A = numeric(ka)
    if A.shape[0] != A.shape[1]:
        raise DatasetError(f"{ka} must be square, got {A.shape}", path=name, field=ka)
    n = A.shape[0]
    Ac = sp.coo_matrix(A)
    A = _undirected(Ac.row, Ac.col, Ac.data.astype(np.float64), n, self_loops=self_loops,
                    name=f"{name} ({ka})")
    if kx is not None:
        Xv = numeric(kx)
        if Xv.shape[0] != n and Xv.shape[1] == n:
            raise DatasetError(f"{kx} has shape {Xv.shape}: expected nodes as rows "
                               f"({n} x d)", path=name, field=kx)
        X = _matrix_from_any(sp.csr_matrix(Xv), n, name, kx)
    else:
        X = sp.csr_matrix((n, 0), dtype=np.float32)
    y = class_names = None
    if ky is not None:
        G = numeric(ky)
        if sp.issparse(G):
            G = G.toarray() if min(G.shape) == 1 else G
        if min(G.shape) == 1 and max(G.shape) == n:
            y, class_names = _classes_from_values(np.asarray(G).ravel(), name, ky)
        elif G.shape[0] == n:
            Gc = sp.csr_matrix(G)
            Gc.eliminate_zeros()
            if Gc.nnz and not (Gc.data == 1).all():
                raise DatasetError(f"{ky} must be a one-hot 0/1 matrix or a vector",
                                   path=name, field=ky)
            Gc.sort_indices()
            cnt = np.diff(Gc.indptr)
            y = np.full(n, -1, np.int64)
            has = cnt > 0
            y[has] = Gc.indices[Gc.indptr[:-1][has]]      # lowest class of each row
            class_names = [str(i) for i in range(G.shape[1])]
        else:
            raise DatasetError(f"{ky} has shape {G.shape}, expected {n} x c or a vector of "
                               f"{n}", path=name, field=ky)
    return A, X, y, None, class_names


def _graph_format(raw: bytes, ext: str) -> str:
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        return "npz"
    if ext == ".mat" or raw[:6] == b"MATLAB":
        return "mat"
    if ext == ".graphml":
        return "graphml"
    if ext == ".gml":
        return "gml"
    head = raw[:2048].lstrip().lower()
    if head.startswith(b"<?xml") or head.startswith(b"<graphml"):
        return "graphml"
    if re.match(rb"^(#[^\n]*\n\s*)*(creator[^\n]*\n\s*)?graph\s*\[", head):
        return "gml"
    return "edgelist"


@_guard
def load_graph(path_or_file, features=None, labels=None, *, format=None, node_ids="auto",
               self_loops=None, class_attr=None, name=None) -> GraphData:
    """Load an attributed graph from a path or a binary file-like object with ``.name``.

    Formats (``format=`` forces one; else by extension and content):
    - ``npz`` written by :func:`save_npz` (kind "graph").
    - MATLAB ``.mat`` (v5/v7, via ``scipy.io.loadmat``, which never unpickles): adjacency
      under network/A/adj..., features under attributes/features/X..., classes under
      group/label/labels/y/gnd... (names matched case-insensitively). A class matrix
      n x c is read one-hot (a row with several classes keeps the lowest one, a row with
      none gets -1); a class vector is mapped to 0..k-1 in sorted order, the original
      values kept as ``class_names``.
    - GraphML and GML (networkx; XML with a DTD/entities is refused). Numeric node
      attributes become feature columns (sorted by name; missing = 0); the classes come
      from ``class_attr`` or else an attribute named class/y/group/community.
    - edge lists: ``u v [w]`` per line, separated by whitespace and/or a comma, ``#``/``%``
      comment lines, an optional ``source,target[,weight]`` header. ``node_ids="auto"``
      uses the names as node indices when all are non-negative integers and dense enough
      (largest id < 2 x number of distinct ids + 1, so 0- and 1-based numberings with a
      few isolated nodes qualify; n = largest + 1), else numbers nodes in order of first
      appearance, keeping the names for a ``labels`` file (``"appearance"`` forces that,
      ``"int"`` forces integer ids). Parsed by a numba kernel.

    Every format gives A symmetric csr float32: an edge given in either direction (or
    repeatedly) becomes one edge with the largest weight given; self-loops are dropped
    unless ``self_loops=True`` (BlogCatalog's .mat has them on the diagonal); an npz is
    read as stored unless ``self_loops=False`` is given explicitly; weights
    must be finite and non-negative. ``features``/``labels`` add (or replace) node
    features and classes: an array/sparse matrix, or a file (see ``_matrix_from_any``,
    ``_labels_from_any``). X is csr float32 (n x 0 when there are none), y int64 with -1 =
    unknown, or None.
    """
    raw, src = _read_bytes(path_or_file)
    if _blank(raw):
        raise DatasetError("empty file", path=src)
    fmt = format or _graph_format(raw, _suffix(src))
    node_names = None
    keep_loops = bool(self_loops)
    if fmt == "npz":
        data = _load_npz_any(_NamedBytes(raw, src))
        if not isinstance(data, GraphData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a graph", path=src,
                               field="kind")
        A, X, y, fnames, cnames = (data.A, data.X, data.y, data.feature_names,
                                   data.class_names)
        if self_loops is False and A.diagonal().any():  # explicit request only
            A = A.tolil()
            A.setdiag(0)
            A = A.tocsr()
            A.eliminate_zeros()
    elif fmt == "mat":
        A, X, y, fnames, cnames = _load_mat(raw, src, keep_loops)
    elif fmt == "graphml":
        A, X, y, fnames, cnames = _load_graphml(raw, src, keep_loops, class_attr)
    elif fmt == "gml":
        A, X, y, fnames, cnames = _load_gml(raw, src, keep_loops, class_attr)
    elif fmt == "edgelist":
        r, c, w, lines, n, node_names = _parse_edge_list(raw, src, node_ids)
        A = _undirected(r, c, w, n, self_loops=keep_loops, name=src, lines=lines)
        X = sp.csr_matrix((n, 0), dtype=np.float32)
        y = fnames = cnames = None
    else:
        raise DatasetError(f"unknown graph format {fmt!r} (npz, mat, graphml, gml, "
                           f"edgelist)", path=src)
    n = A.shape[0]
    if features is not None:
        X = _matrix_from_any(features, n, src, "features")
        fnames = None
    if labels is not None:
        y, cnames = _labels_from_any(labels, n, node_names, src)
    return GraphData(A=A, X=X, y=y, feature_names=fnames, class_names=cnames,
                     name=name or _stem(src),
                     source=f"{fmt}: {src}")


# ---------------------------------------------------------------------------
# planetoid (trusted files only)
# ---------------------------------------------------------------------------

def _restricted_unpickle(path: str):
    """Unpickle a planetoid file allowing only the numpy / scipy.sparse / collections
    classes those files contain. Only for trusted local files (the sample conversion);
    no reader of user input ever calls this."""
    import collections
    import copyreg
    import pickle
    from importlib import import_module

    mult = import_module("numpy._core.multiarray")
    allowed = {
        ("numpy.core.multiarray", "_reconstruct"): mult._reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): mult._reconstruct,
        ("numpy.core.multiarray", "scalar"): mult.scalar,
        ("numpy._core.multiarray", "scalar"): mult.scalar,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "list"): list, ("builtins", "dict"): dict, ("builtins", "set"): set,
        ("builtins", "object"): object,
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
    }
    renamed = {"__builtin__": "builtins", "copy_reg": "copyreg"}
    sparse_classes = {"csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix"}

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            module = renamed.get(module, module)
            if module.startswith("scipy.sparse") and name in sparse_classes:
                return getattr(sp, name)
            if (module, name) in allowed:
                return allowed[(module, name)]
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a planetoid file")

    with open(path, "rb") as fh:
        return Restricted(fh, encoding="latin1").load()


def planetoid_to_npz(prefix, out_path=None, *, name=None) -> GraphData:
    """Convert planetoid-style node data (``<prefix>.x/.y/.tx/.ty/.allx/.ally/.graph`` and
    ``<prefix>.test.index``, e.g. ``ind.cora``) into a GraphData, saved with
    :func:`save_npz` when ``out_path`` is given.

    Follows the GCN reference loader (Kipf & Welling): X = vstack(allx, tx) with the test
    rows put back at the positions listed in ``test.index``; for Citeseer the test range
    has holes (isolated nodes with no features/labels): they get zero features and
    y = -1. A is built from the adjacency lists directly with node i = index i (symmetric,
    binary, duplicates collapsed, self-loops dropped). Unpickling is restricted to the
    numpy/scipy/collections classes the files hold, and only used on trusted local files.
    """
    prefix = os.fspath(prefix)
    parts = {}
    for key in ("x", "y", "tx", "ty", "allx", "ally", "graph"):
        path = f"{prefix}.{key}"
        try:
            parts[key] = _restricted_unpickle(path)
        except Exception as exc:  # noqa: BLE001
            raise DatasetError(f"cannot read planetoid part ({type(exc).__name__}: {exc})",
                               path=path) from exc
    idx_path = f"{prefix}.test.index"
    try:
        with open(idx_path, "rb") as fh:
            test_idx = np.array([int(t) for t in fh.read().split()], np.int64)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the test index ({exc})", path=idx_path) from exc
    allx = sp.csr_matrix(parts["allx"], dtype=np.float32)
    tx = sp.csr_matrix(parts["tx"], dtype=np.float32)
    ally = np.asarray(parts["ally"])
    ty = np.asarray(parts["ty"])
    if tx.shape[0] != test_idx.size or ty.shape[0] != test_idx.size:
        raise DatasetError(f"tx has {tx.shape[0]} rows for {test_idx.size} test indices",
                           path=f"{prefix}.tx")
    n_train = allx.shape[0]
    n = max(n_train + test_idx.size, int(test_idx.max()) + 1)
    d = allx.shape[1]
    # source row of each node in vstack(allx, tx): node i < n_train is allx row i, node
    # test_idx[k] is tx row k; nodes in neither (Citeseer's holes) get an all-zero row
    stacked = sp.vstack([allx, tx]).tocsr()
    src_row = np.full(n, -1, np.int64)
    src_row[:n_train] = np.arange(n_train)
    src_row[test_idx] = n_train + np.arange(test_idx.size)
    have = np.flatnonzero(src_row >= 0)
    select = sp.csr_matrix((np.ones(have.size, np.float32), (have, src_row[have])),
                           shape=(n, stacked.shape[0]))
    X = sp.csr_matrix(select @ stacked)
    Ymat = np.zeros((n, ally.shape[1]), np.float32)
    Ymat[:n_train] = ally
    Ymat[test_idx] = ty
    y = np.where(Ymat.sum(1) > 0, Ymat.argmax(1), -1).astype(np.int64)
    graph = parts["graph"]
    src, dst = [], []
    for u, nbrs in graph.items():
        for v in nbrs:
            src.append(int(u))
            dst.append(int(v))
    r, c = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    n = max(n, int(r.max()) + 1 if r.size else 0, int(c.max()) + 1 if c.size else 0)
    if X.shape[0] < n:
        X = sp.vstack([X, sp.csr_matrix((n - X.shape[0], d), dtype=np.float32)]).tocsr()
        y = np.concatenate([y, np.full(n - y.size, -1, np.int64)])
    A = _undirected(r, c, np.ones(r.size), n, self_loops=False, name=prefix)
    X.sort_indices()
    X.eliminate_zeros()
    stem = name or os.path.basename(prefix).replace("ind.", "")
    g = GraphData(A=A, X=X.astype(np.float32), y=y,
                  class_names=[str(i) for i in range(ally.shape[1])], name=stem,
                  source=f"planetoid: {os.path.basename(prefix)}.* (Yang et al. 2016)")
    if out_path is not None:
        save_npz(g, out_path)
    return g


# ---------------------------------------------------------------------------
# categorical tables
# ---------------------------------------------------------------------------

_TRUE_WORDS = {"1", "true", "yes", "y", "t", "1.0", "+1", "pos", "positive"}
_FALSE_WORDS = {"0", "false", "no", "n", "f", "0.0", "-1", "neg", "negative"}


def _binary_labels(col, label: str, name: str, positive=None) -> np.ndarray:
    """Map a label column to int8 0/1.

    Rule: with ``positive=`` the rows equal to it (compared as text) are 1, the others 0;
    else values that all read as booleans (0/1, true/false, yes/no, t/f, y/n, +1/-1,
    case-insensitive) map naturally; else a column with exactly two distinct values maps
    the larger one in sorted text order to 1 (Adult: '<=50K' -> 0, '>50K' -> 1). Missing
    labels and a third value are errors naming the row.
    """
    import pandas as pd
    s = col.astype(object)
    miss = s.isna().to_numpy()
    if miss.any():
        r = int(np.flatnonzero(miss)[0])
        raise DatasetError(f"missing label in row {r + 1}", path=name, field=label)
    txt = pd.Series(s.astype(str).str.strip().to_numpy(), dtype=object)
    if positive is not None:
        pos = str(positive).strip()
        if not (txt == pos).any():
            raise DatasetError(f"positive={positive!r} never occurs in the label column",
                               path=name, field=label)
        return (txt == pos).to_numpy().astype(np.int8)
    low = txt.str.lower()
    uniq = set(low.unique().tolist())
    if uniq <= (_TRUE_WORDS | _FALSE_WORDS):
        return low.isin(_TRUE_WORDS).to_numpy().astype(np.int8)
    vals = sorted(txt.unique().tolist())
    if len(vals) == 2:
        return (txt == vals[1]).to_numpy().astype(np.int8)
    if len(vals) == 1:
        raise DatasetError(f"label column has a single value {vals[0]!r}: pass positive= to "
                           f"say which value is the positive class", path=name, field=label)
    seen = pd.unique(txt)          # order of appearance: the third value is the culprit
    bad = int(np.flatnonzero((txt == seen[2]).to_numpy())[0])
    raise DatasetError(f"label column is not binary: {len(vals)} distinct values (e.g. "
                       f"{', '.join(map(repr, vals[:4]))}); row {bad + 1} brings a third "
                       f"value {seen[2]!r}; pass positive= to binarise", path=name,
                       field=label)


#: pandas' default missing-value spellings (``keep_default_na``), kept for compatibility
_NA_TEXT = frozenset(["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                      "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                      "nan", "null"])


def _read_delimited(text: str, sep: str, header: bool, src: str):
    """A CSV/TSV table as a DataFrame of one object block (cells str, missing = NaN).

    Parsed by Python's C ``csv`` module (quotes with doubled quotes, a quoted field may
    span lines, spaces after a separator skipped) following pandas' ``read_csv`` rules:
    blank lines are skipped, a header name repeated gets ``.1``, ``.2`` ..., an empty one
    ``Unnamed: i``, a row shorter than the header is padded with missing values, a longer
    one is an error naming its line, and pandas' NA spellings are missing values. Unlike
    pandas, a table of 10^5 columns costs milliseconds, not minutes (one block, no
    per-column objects)."""
    import csv
    import pandas as pd
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"',
                        doublequote=True, skipinitialspace=True, strict=False)
    rows, lines = [], []
    names = None
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0]):
                continue                                  # blank line
            if names is None and header:
                names = row
                continue
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise DatasetError(f"malformed table ({exc})", path=src, line=reader.line_num) from None
    if names is None:
        if not rows:
            raise DatasetError("empty file", path=src)
        names = [f"c{i}" for i in range(len(rows[0]))]
    w = len(names)
    if rows and len(rows[0]) == w + 1 and header:
        raise DatasetError("malformed table: the first row has more fields than the header",
                           path=src, line=lines[0])
    seen, out_names = {}, []
    for i, nm in enumerate(names):
        base = nm if nm != "" else f"Unnamed: {i}"
        cand, k = base, seen.get(base, 0)
        while cand in seen:
            k += 1
            cand = f"{base}.{k}"
        seen[base] = k
        seen[cand] = 0
        out_names.append(cand)
    arr = np.empty((len(rows), w), dtype=object)
    lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    if lengths.size and lengths.max() > w:
        q = int(np.flatnonzero(lengths > w)[0])
        raise DatasetError(f"malformed table (expected {w} fields in line {lines[q]}, saw "
                           f"{int(lengths[q])})", path=src, line=lines[q])
    full = lengths == w
    if full.all():
        if rows:
            arr[:] = rows
    else:
        for i, r in enumerate(rows):
            arr[i, :len(r)] = r
            arr[i, len(r):] = ""
    if arr.size:
        arr[np.frompyfunc(_NA_TEXT.__contains__, 1, 1)(arr).astype(bool)] = np.nan
    return pd.DataFrame(arr, columns=out_names, dtype=object, copy=False)


def _check_parquet_size(raw: bytes, src: str) -> None:
    """Charge a parquet file's declared content to the load's budget before reading it:
    the uncompressed bytes its row groups declare, plus 64 bytes per cell (the text
    object each cell becomes). A few kB of dictionary- or run-length-encoded data can
    declare 10^9 rows; that is refused here, not discovered by running out of memory."""
    import pyarrow.parquet as pq
    try:
        meta = pq.ParquetFile(io.BytesIO(raw)).metadata
        rows, cols = int(meta.num_rows), int(meta.num_columns)
        declared = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds on bad input
        raise DatasetError(f"not a readable parquet file ({type(exc).__name__}: {exc})",
                           path=src) from None
    _check_declared({"rows": rows, "columns": cols}, name=src)
    _budget().charge(max(declared, 0) + 64 * rows * max(cols, 1), "the parquet table",
                     _fail_for(src))


def _as_text(sub):
    """The cells of DataFrame ``sub`` as one 2-D object array of text, missing values as
    ``"<NA>"``. Whole blocks at a time (a per-column loop costs ~1 ms of pandas overhead
    per column: a CSV with 10^5 columns would take minutes): string columns as they are,
    every other column through ``str`` of its Python value."""
    import pandas as pd
    na = sub.isna().to_numpy()
    dtypes = list(sub.dtypes)
    if sub.shape[1] and all(dt == object for dt in dtypes):
        arr = sub.to_numpy(dtype=object, copy=True)
        # cells that are not already text (parquet objects) go through str
        not_str = np.frompyfunc(lambda v: type(v) is not str, 1, 1)(arr).astype(bool) & ~na
        if not_str.any():
            arr[not_str] = np.frompyfunc(str, 1, 1)(arr[not_str])
    else:
        arr = np.empty(sub.shape, dtype=object)
        is_text = np.array([pd.api.types.is_string_dtype(dt) and dt != object
                            for dt in dtypes], bool)
        text, other = np.flatnonzero(is_text), np.flatnonzero(~is_text)
        if text.size:
            arr[:, text] = sub.iloc[:, text].to_numpy(dtype=object)
        vals = sub.iloc[:, other].astype(object).to_numpy(dtype=object)
        arr[:, other] = np.frompyfunc(str, 1, 1)(vals) if vals.size else vals
    if na.any():
        arr[na] = "<NA>"
    return arr


@_guard
def load_categorical(path_or_file, label=None, columns=None, sep=None, *, positive=None,
                     header=True, name=None) -> CategoricalData:
    """Load a table of categorical columns with a binary label: CSV, TSV, parquet or the
    npz of :func:`save_npz`.

    ``label``: the label column (name, or position when ``header=False``); required unless
    the table has a single column named ``label``/``target``/``class``/``y``/``click``.
    ``columns``: the categorical columns to keep (default: all others). ``sep``: CSV
    separator (default: tab for .tsv/.tab, else sniffed between ',', '\\t' and ';' from
    the first line). Every value is kept as text (numbers as written; parquet numbers via
    ``str``); missing values (empty cells and pandas' default NA spellings such as
    ``NA``/``NaN``/``null``) become the token ``"<NA>"``. Labels follow
    :func:`_binary_labels` (``positive=`` picks the positive value). Files must be UTF-8.
    """
    import pandas as pd
    raw, src = _read_bytes(path_or_file)
    if _blank(raw):
        raise DatasetError("empty file", path=src)
    ext = _suffix(src)
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        data = _load_npz_any(_NamedBytes(raw, src))
        if not isinstance(data, CategoricalData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a table", path=src,
                               field="kind")
        return data
    if raw[:4] == b"PAR1" or ext == ".parquet":
        _check_parquet_size(raw, src)
        try:
            df = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # noqa: BLE001
            raise DatasetError(f"not a readable parquet file ({type(exc).__name__}: "
                               f"{exc})", path=src) from None
        if not header:
            df.columns = [f"c{i}" for i in range(df.shape[1])]
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
                               path=src, line=raw[:exc.start].count(b"\n") + 1) from None
        if sep is None:
            if ext in (".tsv", ".tab"):
                sep = "\t"
            else:
                first = raw.split(b"\n", 1)[0]
                counts = {s: first.count(s.encode()) for s in (",", "\t", ";")}
                sep = max(counts, key=counts.get) if max(counts.values()) else ","
        df = _read_delimited(text, sep, header, src)
    df.columns = [str(c) for c in df.columns]
    if len(set(df.columns)) != len(df.columns):
        seen_cols = set()
        dup = next(c for c in df.columns if c in seen_cols or seen_cols.add(c))
        raise DatasetError(f"column {dup!r} appears twice", path=src, field=dup)
    if isinstance(label, int) and not header:
        label = f"c{label}"
    if label is None:
        cands = [c for c in df.columns if c.lower() in ("label", "target", "class", "y",
                                                        "click")]
        if len(cands) != 1:
            raise DatasetError("say which column is the binary label: label=... "
                               f"(columns: {', '.join(list(df.columns)[:12])})", path=src)
        label = cands[0]
    label = str(label)
    if label not in df.columns:
        raise DatasetError(f"no label column {label!r} (columns: "
                           f"{', '.join(list(df.columns)[:12])})", path=src, field=label)
    if len(df) == 0:
        raise DatasetError("the table has no rows", path=src)
    y = _binary_labels(df[label], label, src, positive)
    if columns is None:
        cols = [c for c in df.columns if c != label]
    else:
        cols = [str(c) for c in columns]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DatasetError(f"no column {missing[0]!r}", path=src, field=missing[0])
        if label in cols:
            raise DatasetError(f"the label {label!r} cannot also be a feature column",
                               path=src, field=label)
    if not cols:
        raise DatasetError("no categorical columns besides the label", path=src)
    out = pd.DataFrame(_as_text(df[cols]), columns=cols, index=pd.RangeIndex(len(df)),
                       dtype=object, copy=False)
    return CategoricalData(table=out, labels=y, label_name=label, name=name or _stem(src),
                           source=f"table: {src}")
