"""Train / validation / test splits of a dataset (part of :mod:`featagg_core.experiment`).

One rule for the dashboard, the CLI and the triage report (docs/RUN_MODEL.md):

* a multi-label dataset with its own test part (``X_test``/``Y_test`` with rows) keeps it:
  ``how = "dataset"``, ``test`` indexes the test part, ``train``/``valid`` index ``X``
  and the validation rows are carved from the training rows with ``random_state``;
* anything else (no own test part; graphs: nodes; tables: rows): ``how = "random"``,
  ``perm = default_rng(random_state).permutation(n)``, the first ``round(test_size * n)``
  (clipped to [1, n - 1]) rows of ``perm`` are the test rows, the next
  ``round(valid_size * n)`` the validation rows, the rest the training rows.

Rows depend only on (n, seed, fractions), never on the data's values, so two datasets of
the same size get the same rows (the leak tests rely on it).
"""
from __future__ import annotations

import hashlib
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

__all__ = ["Split", "make_split", "split_rows", "ROWS", "row_indices", "n_rows_of",
           "has_own_test", "check_split_fits", "take_rows"]

#: the values ``rows`` may take in :func:`split_rows`, ``evaluate`` and the sweeps
ROWS = ("train", "valid", "test", "train+valid")


@fill_doc
def has_own_test(data) -> bool:
    """Whether ``data`` is a multi-label dataset that ships its own (non-empty) test part.

    {data_any_params}

    Returns
    -------
    bool
        True when it has its own test part.
    """
    if getattr(data, "kind", None) != "multilabel":
        return False
    Xt, Yt = getattr(data, "X_test", None), getattr(data, "Y_test", None)
    return Xt is not None and Yt is not None and Xt.shape[0] > 0


@fill_doc
def n_rows_of(data) -> int:
    """Rows a split divides: points of ``X`` (multi-label), nodes (graph), rows (table).

    {data_any_params}

    Returns
    -------
    int
        The number of rows.

    Raises
    ------
    ValueError
        When ``data`` is not a multilabel, graph or table dataset.
    """
    kind = getattr(data, "kind", None)
    if kind == "multilabel":
        return int(data.X.shape[0])
    if kind == "graph":
        return int(data.A.shape[0])
    if kind == "table":
        return int(len(data.labels))
    raise ValueError(f"data must be a multilabel, graph or table dataset, got "
                     f"{type(data).__name__}")


def _unit(name: str) -> str:
    return {"graph": "nodes"}.get(name, "rows")


@dataclass(frozen=True, eq=False)
class Split:
    """Which rows of a dataset train, validate and test (see :func:`make_split`).

    ``train``, ``valid``, ``test`` are sorted, read-only int64 row indices; ``test``
    indexes ``data.X_test`` when ``own_test`` (``how == "dataset"``), ``data.X`` (nodes,
    table rows) otherwise. ``split_id`` is a stable 16-hex fingerprint of the dataset and
    the rows; two splits are equal when their ids are.
    """
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    split_id: str
    how: str
    test_size: Optional[float]
    valid_size: float
    random_state: int
    own_test: bool
    n_rows: int
    n_test_rows: int
    dataset_fingerprint: str
    dataset_name: str = ""
    dataset_kind: str = "multilabel"

    def __eq__(self, other):
        return isinstance(other, Split) and other.split_id == self.split_id

    def __hash__(self):
        return hash(self.split_id)

    def __repr__(self):
        return (f"Split({self.split_id}, how={self.how!r}, train={self.train.size}, "
                f"valid={self.valid.size}, test={self.test.size})")

    def describe(self) -> str:
        """One line for people.

        E.g. "Bibtex's own split: 4,880 training rows (976 of them validation) / 2,515 test".

        Returns
        -------
        str
            The description.
        """
        unit = _unit(self.dataset_kind)
        name = self.dataset_name or "the dataset"
        n_fit = self.train.size + self.valid.size
        valid = f" ({self.valid.size:,} of them validation)" if self.valid.size else ""
        if self.how == "dataset":
            head = f"{name}'s own split"
        else:
            head = (f"a random {100 * float(self.test_size):.0f} % test split of {name} "
                    f"(seed {self.random_state})")
        return f"{head}: {n_fit:,} training {unit}{valid} / {self.test.size:,} test"

    def to_record(self) -> dict:
        """JSON-able summary (no row arrays): what a run record stores about its split.

        Returns
        -------
        dict
            The split's id, settings (how, test/valid sizes, seed), row counts, the dataset's
            fingerprint and :meth:`describe`.
        """
        return {"split_id": self.split_id, "how": self.how, "test_size": self.test_size,
                "valid_size": self.valid_size, "random_state": self.random_state,
                "own_test": self.own_test, "n_rows": self.n_rows,
                "n_train": int(self.train.size), "n_valid": int(self.valid.size),
                "n_test": int(self.test.size), "dataset_fingerprint": self.dataset_fingerprint,
                "description": self.describe()}


def _fraction(name: str, value, lo_open: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a number in {'(0' if lo_open else '[0'}, 1), "
                         f"got {value!r}")
    v = float(value)
    if not ((0 < v) if lo_open else (0 <= v)) or v >= 1:
        raise ValueError(f"{name} must be a number in {'(0' if lo_open else '[0'}, 1), "
                         f"got {value!r}")
    return v


def _frozen(a) -> np.ndarray:
    out = np.ascontiguousarray(np.sort(np.asarray(a, dtype=np.int64)))
    out.flags.writeable = False
    return out


def _split_id(fingerprint: str, how: str, train, valid, test) -> str:
    h = hashlib.sha1()
    h.update(f"{fingerprint}|{how}|{train.size}|{valid.size}|{test.size}|".encode())
    for a in (train, valid, test):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


def make_split(data, test_size: Optional[float] = 0.2, valid_size: float = 0.0,
               random_state: int = 0, *, how: Optional[str] = None) -> Split:
    """The split of ``data`` every run, page and command uses (docs/RUN_MODEL.md).

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
    test_size : float in (0, 1), default 0.2
        Fraction of the rows held out for testing (random splits; ignored, and recorded as
        None, when the dataset's own test part is used).
    valid_size : float in [0, 1), default 0.0
        Fraction held out for validation (of all rows for a random split, of the training
        rows for the dataset's own split); at least one row when > 0.
    random_state : int >= 0, default 0
        Seed of ``numpy.random.default_rng`` (the permutation of the rows).
    how : {None, "dataset", "random"}, keyword only
        None (default): the dataset's own test part when it has one, else random.
        "random" forces a random split of ``data.X`` even when the dataset has its own
        test part (which is then not used); "dataset" requires the own test part.

    Returns
    -------
    Split
        The train / valid / test row indices, with the settings and the dataset's
        fingerprint.

    Raises
    ------
    ValueError
        For a setting out of range, ``how="dataset"`` without an own test part, or sizes
        that leave no training rows.
    """
    n = n_rows_of(data)
    rs = random_state
    if isinstance(rs, bool) or not isinstance(rs, numbers.Integral) or rs < 0:
        raise ValueError(f"random_state must be a non-negative integer, got {rs!r}")
    rs = int(rs)
    vs = _fraction("valid_size", valid_size, lo_open=False)
    own = has_own_test(data)
    if how is None:
        how = "dataset" if own else "random"
    if how not in ("dataset", "random"):
        raise ValueError(f"how must be None, 'dataset' or 'random', got {how!r}")
    if how == "dataset" and not own:
        raise ValueError("how='dataset': this dataset has no test part of its own; use a "
                         "random split (how=None or 'random')")
    fp = data.fingerprint
    if how == "dataset":
        if n < 1:
            raise ValueError("the dataset has no training rows")
        n_valid = int(round(vs * n))
        if vs > 0:
            n_valid = max(1, n_valid)
        if n_valid > n - 1:
            raise ValueError(f"valid_size={valid_size!r} leaves no training rows of {n}")
        perm = np.random.default_rng(rs).permutation(n)
        valid, train = perm[:n_valid], perm[n_valid:]
        test = np.arange(data.X_test.shape[0])
        ts = None
    else:
        ts = _fraction("test_size", test_size, lo_open=True)
        if n < 2:
            raise ValueError(f"need at least 2 {_unit(data.kind)} to split, got {n}")
        n_test = min(max(int(round(ts * n)), 1), n - 1)
        n_valid = int(round(vs * n))
        if vs > 0:
            n_valid = max(1, n_valid)
        if n_test + n_valid > n - 1:
            raise ValueError(f"test_size={test_size!r} and valid_size={valid_size!r} leave "
                             f"no training {_unit(data.kind)} of {n}")
        perm = np.random.default_rng(rs).permutation(n)
        test, valid, train = perm[:n_test], perm[n_test:n_test + n_valid], perm[n_test + n_valid:]
    train, valid, test = _frozen(train), _frozen(valid), _frozen(test)
    return Split(train=train, valid=valid, test=test,
                 split_id=_split_id(fp, how, train, valid, test), how=how, test_size=ts,
                 valid_size=vs, random_state=rs, own_test=how == "dataset", n_rows=n,
                 n_test_rows=int(test.size), dataset_fingerprint=fp,
                 dataset_name=str(getattr(data, "name", "") or ""), dataset_kind=data.kind)


@fill_doc
def check_split_fits(data, split: Split) -> None:
    """ValueError unless ``split`` was made for ``data`` (same fingerprint).

    Parameters
    ----------
    {data_any}
    split : Split
        The split to check.

    Raises
    ------
    ValueError
        When ``split`` is not a Split or was made for another dataset.
    """
    if not isinstance(split, Split):
        raise ValueError(f"split must be a Split from make_split, got {type(split).__name__}")
    if split.dataset_fingerprint != data.fingerprint:
        raise ValueError(f"split {split.split_id} was made for another dataset (fingerprint "
                         f"{split.dataset_fingerprint}, this one is {data.fingerprint}); "
                         "make a split of this dataset with make_split(data)")


@fill_doc
def row_indices(split: Split, rows: str):
    """The indices of ``rows`` and the part of the dataset they index.

    Parameters
    ----------
    split : Split
        The split.
    {rows_split}

    Returns
    -------
    indices : ndarray of int64
        The row indices.
    part : {"test", "main"}
        "test" when they index the dataset's own test part, else "main" (``X``, nodes,
        table rows).

    Raises
    ------
    ValueError
        For an unknown ``rows``.
    """
    if rows not in ROWS:
        raise ValueError(f"rows must be one of {', '.join(ROWS)}, got {rows!r}")
    if rows == "test":
        return split.test, ("test" if split.own_test else "main")
    if rows == "train":
        return split.train, "main"
    if rows == "valid":
        return split.valid, "main"
    return _frozen(np.concatenate([split.train, split.valid])), "main"


@fill_doc
def split_rows(data, split: Split, rows: str):
    """A container of the same kind holding only ``rows`` of ``split``.

    Graphs give the subgraph induced by those nodes (their features, classes and the edges
    among them). The result has no test part of its own.

    Parameters
    ----------
    {split_rows_args}

    {rows_data_returns}

    Raises
    ------
    ValueError
        When ``split`` was made for another dataset, or for an unknown ``rows``.
    """
    check_split_fits(data, split)
    return take_rows(data, split, rows)


@fill_doc
def take_rows(data, split: Split, rows: str):
    """:func:`split_rows` without the fingerprint check (for callers that made it once).

    Parameters
    ----------
    {split_rows_args}

    {rows_data_returns}
    """
    from featagg_core.data import CategoricalData, GraphData, MultiLabelData

    idx, part = row_indices(split, rows)
    name = f"{getattr(data, 'name', '') or 'dataset'} ({rows})"
    if data.kind == "multilabel":
        X, Y = (data.X_test, data.Y_test) if part == "test" else (data.X, data.Y)
        return MultiLabelData(X=X[idx], Y=Y[idx], feature_names=data.feature_names,
                              label_names=data.label_names, name=name, source=data.source)
    if data.kind == "graph":
        A = data.A.tocsr()[idx][:, idx].tocsr()
        y = None if data.y is None else np.asarray(data.y)[idx]
        return GraphData(A=A, X=data.X.tocsr()[idx], y=y, feature_names=data.feature_names,
                         class_names=data.class_names, name=name, source=data.source)
    table = data.table.iloc[idx].reset_index(drop=True)
    return CategoricalData(table=table, labels=np.asarray(data.labels)[idx],
                           label_name=data.label_name, name=name, source=data.source)
