"""Input checks shared by the estimators (DEFRAG, FIAT/REFRAG, KTXMLC, BMGUFS).

Why this module exists: several estimator modules grew their own private copies of the
same argument checks (dense/sparse -> canonical csr, "contains NaN or infinite values",
integer parameters, 0/1 label matrices). The copies that really behave the same live here
once, so that a fix lands everywhere.

Only the checks whose semantics are identical in every caller are here. Where a module's
check differs in a way that matters (dtype, dropping explicit zeros, the order of checks,
the wording of an error message that users or tests see), the module keeps its own helper
or wraps these with the difference spelled out there, e.g.

* ``fiat._as_csr`` (also used by REFRAG) builds a float64 copy, drops stored zeros and
  checks for NaN before summing duplicates, and refuses non-numeric input;
* ``refrag._check_labels`` is float64, says "0/1 values" and checks 0/1 before the row
  count, and accepts a label matrix without columns;
* ``bmgufs`` words every message as ``"<name>: ..."`` and has graph-specific checks.

Everything here is a pure function; no module-level mutable state.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["as_csr", "check_finite", "check_n_features", "check_binary_labels",
           "check_int"]


def check_finite(M: sp.spmatrix, name: str) -> None:
    """Refuse a sparse matrix with a NaN or infinite stored value."""
    if M.nnz and not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_n_features(M, name: str, n_features, what: str = "features") -> None:
    """Refuse ``M`` when ``n_features`` is given and ``M`` has another number of columns."""
    if n_features is not None and M.shape[1] != n_features:
        raise ValueError(f"{name} has {M.shape[1]} {what}, the model was fitted on "
                         f"{n_features}")


def as_csr(X, name: str = "X", *, dtype=np.float32, n_features=None,
           what: str = "features") -> sp.csr_matrix:
    """``X`` (dense 2-D array-like or scipy sparse) as a csr matrix of ``dtype`` with sorted
    indices and duplicates summed (stored zeros are kept).

    The caller's matrix is never modified: it is copied when its dtype differs or it is not
    in canonical format, otherwise the result may share its arrays. Raises ``ValueError``
    naming ``name`` when dense ``X`` is not 2-D, when a stored value is NaN or infinite,
    and, if ``n_features`` is given, when ``X`` has another number of columns. No check of
    the dtype kind: non-numeric input fails in the conversion (callers that want a
    friendlier message check first).
    """
    if not sp.issparse(X):
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {arr.ndim} dimension(s)")
        X = sp.csr_matrix(arr)
    X = sp.csr_matrix(X)
    if X.dtype != dtype:
        X = X.astype(dtype)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts the indices
    check_finite(X, name)
    check_n_features(X, name, n_features, what)
    return X


def check_binary_labels(Y, n_rows: int, name: str = "Y", *,
                        dtype=np.float32) -> sp.csr_matrix:
    """A 0/1 label matrix with ``n_rows`` rows and at least one label column, as a new
    canonical csr of ``dtype`` without stored zeros (the caller's matrix is not modified).

    Checks, in this order: 2-D, row count, only 0/1 entries, at least one column.
    """
    if not sp.issparse(Y):
        Y = np.asarray(Y)
        if Y.ndim != 2:
            raise ValueError(f"{name} must be a 2-D 0/1 label matrix, got {Y.ndim} "
                             f"dimension(s)")
        Y = sp.csr_matrix(Y)
    Y = sp.csr_matrix(Y, dtype=dtype, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    Y.sort_indices()
    if Y.shape[0] != n_rows:
        raise ValueError(f"{name} has {Y.shape[0]} rows but X has {n_rows}")
    if Y.nnz and not np.all(Y.data == 1):
        raise ValueError(f"{name} must hold only 0/1 entries")
    if Y.shape[1] == 0:
        raise ValueError(f"{name} has no labels")
    return Y


def check_int(name: str, value, low: int, allow_none: bool = False):
    """``value`` as a Python int ``>= low`` (bools refused); ``None`` passes through when
    ``allow_none``."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)
