"""The dataset containers (:class:`MultiLabelData`, :class:`GraphData`,
:class:`CategoricalData`), :class:`DatasetError` and the content fingerprints (hashed once
per container).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.docstrings import fill_doc


class DatasetError(ValueError):
    """Malformed or unsupported input: the message names file, line/field and problem.

    The message reads ``"<path>, line <n>, field <f>: <message>"`` (the parts that are
    given); it is the only exception a public reader lets escape.

    Parameters
    ----------
    message : str
        What is wrong, in the user's terms (kept as ``reason``).
    path : str, optional
        The file: a path or an upload's name.
    line : int, optional
        The 1-based line of a text file.
    field : str, optional
        The field, archive member, variable or column.

    Attributes
    ----------
    path, line, field : as given
    reason : str
        ``message`` without the location.
    """

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
@fill_doc
class MultiLabelData:
    """A sparse multi-label dataset.

    ``X_test``/``Y_test`` hold a held-out split when the source has one.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        The features: csr float32, n x d.
    Y : scipy.sparse.csr_matrix
        The labels: csr float32 of 0/1, n x L.
    feature_names : sequence of str, optional
        One name per column of ``X``.
    label_names : sequence of str, optional
        One name per column of ``Y``.
    X_test : scipy.sparse.csr_matrix, optional
        Held-out features (d columns).
    Y_test : scipy.sparse.csr_matrix, optional
        Held-out labels (L columns), given together with ``X_test``.
    {container_name_source}

    Attributes
    ----------
    kind : str
        ``"multilabel"`` (not a parameter).
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
        """Number of training rows.

        Returns
        -------
        int
            Rows of ``X``.
        """
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of features.

        Returns
        -------
        int
            Columns of ``X``.
        """
        return self.X.shape[1]

    @property
    def n_labels(self) -> int:
        """Number of labels.

        Returns
        -------
        int
            Columns of ``Y``.
        """
        return self.Y.shape[1]

    @property
    @fill_doc
    def fingerprint(self) -> str:
        """Hash of X, Y, the test part and the feature and label names.

        {fingerprint_returns}
        """
        return _fingerprint(self.X, self.Y, self.X_test, self.Y_test,
                            _names_or_none(self.feature_names),
                            _names_or_none(self.label_names))


@dataclass
@fill_doc
class GraphData:
    """An attributed graph: A csr n x n symmetric, X node features (csr), y classes or None.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        The adjacency: csr float32, n x n, symmetric, non-negative weights.
    X : scipy.sparse.csr_matrix
        Node features: csr float32, n x d (n x 0 when there are none).
    y : numpy.ndarray, optional
        int64 class of each node, -1 = unknown; None when the graph has no classes.
    feature_names : sequence of str, optional
        One name per column of ``X``.
    class_names : sequence of str, optional
        The name of each class code 0, 1, ...
    {container_name_source}
    file_edges : dict, optional
        What the file's edge list held before the reader made ``A`` symmetric and dropped
        self-loops (set by :func:`~featagg_core.data.load_graph` for edge lists, GraphML,
        GML and MATLAB files, kept through :func:`~featagg_core.data.save_npz`): counts
        ``listed_edges``, ``self_loops``, ``duplicate_edges``, ``one_way_edges`` and
        ``two_way_edges`` (None for an undirected file), ``directed``, and ``examples`` (a few ``"a -> b"`` edges per
        count). None when unknown (a graph built in Python). About the file, not the data:
        not part of the fingerprint nor of ``==``.

    Attributes
    ----------
    kind : str
        ``"graph"`` (not a parameter).
    """
    A: sp.csr_matrix
    X: sp.csr_matrix
    y: Optional[np.ndarray] = None
    feature_names: Optional[Sequence[str]] = None
    class_names: Optional[Sequence[str]] = None
    name: str = ""
    source: str = ""
    file_edges: Optional[dict] = field(default=None, compare=False, repr=False)
    kind: str = field(default="graph", init=False)

    @property
    def n_nodes(self) -> int:
        """Number of nodes.

        Returns
        -------
        int
            Rows of ``A``.
        """
        return self.A.shape[0]

    @property
    @fill_doc
    def fingerprint(self) -> str:
        """Hash of A, X, y and the feature and class names.

        {fingerprint_returns}
        """
        return _fingerprint(self.A, self.X, self.y, _names_or_none(self.feature_names),
                            _names_or_none(self.class_names))


@dataclass
@fill_doc
class CategoricalData:
    """A table of categorical columns with a binary label.

    Parameters
    ----------
    table : pandas.DataFrame
        The categorical columns (label column removed); the readers keep every cell as
        text, missing values as ``"<NA>"``.
    labels : numpy.ndarray
        int8 array of 0/1, one per row.
    label_name : str
        The name of the label column in the source.
    {container_name_source}

    Attributes
    ----------
    kind : str
        ``"table"`` (not a parameter).
    """
    table: "object"
    labels: np.ndarray
    label_name: str = "label"
    name: str = ""
    source: str = ""
    kind: str = field(default="table", init=False)

    @property
    def n_rows(self) -> int:
        """Number of rows.

        Returns
        -------
        int
            Entries of ``labels``.
        """
        return len(self.labels)

    @property
    def columns(self):
        """The categorical columns' names.

        Returns
        -------
        list
            The column labels of ``table``, in order.
        """
        return list(self.table.columns)

    @property
    @fill_doc
    def fingerprint(self) -> str:
        """Hash of the labels, the label name, the column names and every cell (as text),
        column by column; one pass over the table's block, whatever its width.

        {fingerprint_returns}
        """
        cells = self.table.to_numpy(dtype=object).ravel(order="F")
        return _fingerprint(self.labels, _Names([str(self.label_name)]),
                            _Names(map(str, self.table.columns)),
                            _Names(map(str, cells.tolist())))


def _memoize_fingerprint(cls) -> None:
    """Make ``cls.fingerprint`` hash the content once and then return the same value while
    the container holds the same objects.

    A fingerprint is a sha1 over every stored entry, and the dashboard reads it many times
    per script run (page namespaces, the split, the run checks): on a large dataset that
    cost is paid once (measured in ``benchmarks/results/data_notes.md``).
    The memo is keyed on the identity of the container's fields (and a sparse matrix's
    nnz): assigning a new matrix or name list recomputes it. Containers are treated as
    immutable once fingerprinted; changing the stored values of ``X`` in place is not seen.
    """
    from dataclasses import fields as _fields
    compute = cls.fingerprint.fget
    names = tuple(f.name for f in _fields(cls)
                  if f.name not in ("kind", "name", "source", "file_edges"))

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
