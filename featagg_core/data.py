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
