"""The npz layout of all three containers: :func:`save_npz` and the bounded, validated reader
(only the members a layout needs are inflated; nothing is unpickled).
"""
from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.bounded import open_zip, read_npy_member
from featagg_core.data._containers import CategoricalData, DatasetError, GraphData, MultiLabelData
from featagg_core.data._input import _atomic_write, _budget, _fail_for, _read_bytes
from featagg_core.data._checks import (
    _check_classes,
    _check_csr_parts,
    _check_names,
    _check_symmetric,
)


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
    -1 for unknown; ``name`` and ``source`` as 0-d unicode arrays; a graph's
    ``file_edges`` (what its source file held) as a 0-d unicode JSON document. Tables store
    ``columns`` (unicode), one unicode array ``col_<i>`` per column (missing values as
    "<NA>"), ``labels`` int8 and ``label_name``. The file is written atomically
    (temporary file + ``os.replace``).

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
        The dataset to write.
    path : str or os.PathLike
        The file to write (replaced whole, never half-written).

    Raises
    ------
    TypeError
        When ``data`` is none of the three containers.
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
        if getattr(data, "file_edges", None) is not None:
            import json
            arrays["file_edges"] = np.array(json.dumps(data.file_edges))
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
    budget before it is inflated (see :func:`featagg_core.utils.bounded.read_npy_member`), so
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
            # the refusal names the member itself ("member 'X_data.npy' is damaged ...")
            self.cache[key] = read_npy_member(self.zf, self.members[key], _budget(), fail,
                                              kinds="biufUS")
        return self.cache[key]

    def keys(self):
        return list(self.members)


#: up to this many members :func:`_npz_kind` reads an npz's directory with zipfile; beyond,
#: it searches the directory's bytes (at most ``_KIND_MAX_DIRECTORY`` of them)
_KIND_MAX_MEMBERS = 10_000
_KIND_MAX_DIRECTORY = 64 << 20


def _npz_kind(path) -> "str | None":
    """The kind of the featagg npz ``path`` ("multilabel", "graph", "table") from its
    member *names* alone: only the archive's end record and central directory are read,
    never a member's content (a ``kind.npy`` may inflate to gigabytes). None when it is
    not a featagg npz, is unreadable, or declares more than ``_KIND_MAX_MEMBERS``."""
    import zipfile
    from featagg_core.utils.bounded import zip_directory
    try:
        with open(path, "rb") as fh:
            found = zip_directory(fh)
            if found is None:
                return None
            count, cd_off, cd_size = found
            if count > _KIND_MAX_MEMBERS:
                # a wide table (one member per column): the directory's bytes are searched
                # for the few names that tell the kind, without a ZipInfo per member
                if cd_size > _KIND_MAX_DIRECTORY:
                    return None
                fh.seek(cd_off)
                directory = fh.read(cd_size)
                names = {n for n in ("kind.npy", "X_data.npy", "Y_data.npy", "A_data.npy",
                                     "columns.npy", "labels.npy")
                         if re.search(rb"PK\x01\x02.{42}" + re.escape(n.encode()), directory,
                                      re.S)}
            else:
                fh.seek(0)
                with zipfile.ZipFile(fh) as zf:
                    names = {i.filename for i in zf.infolist()}
    except Exception:  # noqa: BLE001 - unreadable: no kind
        return None
    if "kind.npy" not in names:
        return None
    if {"Y_data.npy", "X_data.npy"} <= names:
        return "multilabel"
    if "A_data.npy" in names:
        return "graph"
    if {"columns.npy", "labels.npy"} <= names:
        return "table"
    return None


def _open_npz(raw: bytes, name: str) -> _NpzMembers:
    if not raw:
        raise DatasetError("empty file", path=name)
    if raw[:6] == b"\x93NUMPY":
        raise DatasetError("a single .npy array, not an npz archive", path=name)
    fail = _fail_for(name)
    zf = open_zip(raw, lambda m: fail(f"not a readable npz archive: {m}"), what="npz archive",
                  budget=_budget())
    return _NpzMembers(zf, name)


def _load_npz_any(path_or_file):
    """Read an npz written by :func:`save_npz` into the matching container (validated)."""
    raw, name = _read_bytes(path_or_file)
    z = _open_npz(raw, name)
    with z.zf:
        return _npz_to_container(z, name)


_EDGE_COUNTS = ("listed_edges", "self_loops", "duplicate_edges", "one_way_edges",
                "two_way_edges")


def _npz_file_edges(z, name):
    """A graph's ``file_edges`` entry, checked field by field (None when absent)."""
    import json
    if "file_edges" not in z:
        return None
    text = _npz_str(z, "file_edges", name)

    def bad(what):
        return DatasetError(f"file_edges: {what}", path=name, field="file_edges")

    try:
        doc = json.loads(text)
    except ValueError:
        raise bad("not a JSON document") from None
    if not isinstance(doc, dict) or set(doc) != {*_EDGE_COUNTS, "directed", "examples"}:
        raise bad("expected the keys " + ", ".join((*_EDGE_COUNTS, "directed", "examples")))
    if not isinstance(doc["directed"], bool):
        raise bad("directed must be true or false")
    for k in _EDGE_COUNTS:
        v = doc[k]
        if v is None and k.endswith("way_edges") and not doc["directed"]:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise bad(f"{k} must be a count >= 0")
    ex = doc["examples"]
    if not isinstance(ex, dict) or set(ex) != set(_EDGE_COUNTS[1:4]):
        raise bad("examples must give " + ", ".join(_EDGE_COUNTS[1:4]))
    for k, v in ex.items():
        if v is None and doc[k] is None:
            continue
        if not isinstance(v, list) or not all(isinstance(e, str) for e in v):
            raise bad(f"examples of {k} must be a list of text")
    return doc


def _npz_to_container(z: dict, name: str):
    kind = _npz_str(z, "kind", name, default="")
    if not kind:
        # a bare scipy.sparse.save_npz file or unknown layout
        # said to a browser user too, so in the user's terms, not the writer's name
        raise DatasetError("this .npz is not a featagg dataset file (it has no 'kind' entry; "
                           "those files come from featagg's own Python data writer). A plain "
                           "numpy or scipy .npz is not read: save the data in one of the "
                           "other formats listed for this kind of data instead",
                           path=name, field="kind")
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
                         class_names=class_names, file_edges=_npz_file_edges(z, name),
                         **meta)
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
