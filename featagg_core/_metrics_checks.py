"""Input checks of :mod:`featagg_core.metrics` (the cut-offs, the 0/1 truth, the scores, the
propensity weights), moved here whole to keep that module short; ``metrics`` re-exports
them (``_refrag_tuning`` uses ``metrics._check_true``).
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp


def _check_k(k):
    """Return (ks as int64 array, scalar?)."""
    scalar = isinstance(k, numbers.Integral) and not isinstance(k, bool)
    if scalar:
        ks = [int(k)]
    elif isinstance(k, (list, tuple, np.ndarray)):
        ks = list(k)
        if not ks:
            raise ValueError(f"k must be a non-empty list of cut-offs, got {k!r}")
        for v in ks:
            if not isinstance(v, numbers.Integral) or isinstance(v, bool):
                raise ValueError(f"k must be integers (cut-offs), got {v!r}")
        ks = [int(v) for v in ks]
    else:
        raise ValueError(f"k must be a positive int or a list/tuple of them, got {k!r}")
    if min(ks) < 1:
        raise ValueError(f"k must be >= 1, got {min(ks)}")
    return np.asarray(ks, dtype=np.int64), scalar


def _check_true(Y_true, name="Y_true") -> sp.csr_matrix:
    """Binary truth as canonical csr (sorted indices, no duplicates, no explicit zeros)."""
    if sp.issparse(Y_true):
        Y = sp.csr_matrix(Y_true, copy=True)
        Y.sum_duplicates()
    else:
        arr = np.asarray(Y_true)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {arr.ndim} dimensions")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ValueError(f"{name} must be numeric 0/1, got dtype {arr.dtype}")
        Y = sp.csr_matrix(arr)
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        bad = Y.data[Y.data != 1][0]
        raise ValueError(f"{name} must hold only 0/1 values, found {bad!r}")
    Y.sort_indices()
    return Y


def _check_score(Y_score, shape):
    if sp.issparse(Y_score):
        S = sp.csr_matrix(Y_score)
        if S.shape != shape:
            raise ValueError(f"Y_score has shape {S.shape} but Y_true has shape {shape}")
        if not S.has_canonical_format:
            S = S.copy()
            S.sum_duplicates()
        if S.nnz and not np.isfinite(S.data).all() and np.isnan(S.data).any():
            raise ValueError("Y_score contains NaN")
        return S
    S = np.asarray(Y_score)
    if S.ndim != 2:
        raise ValueError(f"Y_score must be a 2-D matrix, got {S.ndim} dimensions")
    if S.shape != shape:
        raise ValueError(f"Y_score has shape {S.shape} but Y_true has shape {shape}")
    if not (np.issubdtype(S.dtype, np.number) or S.dtype == bool) or np.iscomplexobj(S):
        raise ValueError(f"Y_score must be real numbers, got dtype {S.dtype}")
    if np.issubdtype(S.dtype, np.floating) and np.isnan(S).any():
        raise ValueError("Y_score contains NaN")
    return S


def _check_weights(inv_propensity, n_labels):
    w = np.asarray(inv_propensity, dtype=np.float64).ravel()
    if w.shape[0] != n_labels:
        raise ValueError(f"inv_propensity has {w.shape[0]} entries, expected one per label "
                         f"({n_labels})")
    if not np.isfinite(w).all():
        raise ValueError("inv_propensity contains NaN or inf")
    return w
