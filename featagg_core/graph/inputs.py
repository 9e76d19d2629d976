"""What the graph estimators accept: their parameter constraints and the checks of the
adjacency matrix ``A`` and the node features ``X``.

Deliberately not the shared :mod:`featagg_core.utils.validation` matrix helpers: every
message about a matrix here reads "<name>: ..." (e.g. "A: the graph has no edges"), the
matrices are float64 with stored zeros dropped, X must be non-negative with at least one
non-zero, and A has graph checks (square, >= 2 nodes, edges, symmetric). Parameters are
declared (BlockModel / BMGUFS ``_parameter_constraints``) and refused with the one wording.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.validation import Interval, Options

#: random_state: what sklearn.utils.check_random_state takes (a seed it refuses, above
#: 2**32 - 1, fails there)
RANDOM_STATE = [Interval(Integral, 0, None, closed="left"), np.random.RandomState, None]
#: how an ONMtF restart starts
BLOCK_INIT = [Options(str, {"random", "spectral"})]
#: the constraint "a real number > 0"
POSITIVE = [Interval(Real, 0, None, closed="neither")]
#: the constraint "a real number >= 0"
NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]


def check_adjacency(A) -> sp.csr_matrix:
    """``A`` as a float64 csr adjacency with sorted indices and no stored zeros.

    Parameters
    ----------
    A : sparse or dense matrix, shape (n, n)
        The graph.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n)

    Raises
    ------
    ValueError
        When ``A`` is missing, not 2-D or square, has fewer than 2 nodes, no edges, NaN or
        negative weights, or is not symmetric.
    """
    if A is None:
        raise ValueError("A: the adjacency matrix is missing")
    if sp.issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64)
    else:
        arr = np.asarray(A)
        if arr.ndim != 2:
            raise ValueError(f"A: expected a 2-D adjacency matrix, got {arr.ndim}-D")
        A = sp.csr_matrix(arr.astype(np.float64))
    n, m = A.shape
    if n != m:
        raise ValueError(f"A: the adjacency matrix must be square, got {n} x {m}")
    if n < 2:
        raise ValueError(f"A: need at least 2 nodes, got {n}")
    A.sum_duplicates()
    A.eliminate_zeros()
    if A.nnz == 0:
        raise ValueError("A: the graph has no edges")
    if not np.all(np.isfinite(A.data)):
        raise ValueError("A: contains NaN or infinite weights")
    if A.data.min() < 0:
        raise ValueError("A: edge weights must be non-negative (block models by ONMtF)")
    diff = abs(A - A.T)
    if diff.nnz and diff.max() > 1e-8 * max(abs(A).max(), 1.0):
        raise ValueError("A: the adjacency matrix must be symmetric (an undirected graph); "
                         "symmetrise it first, e.g. A.maximum(A.T)")
    A.sort_indices()
    return A


def _as_node_features(X) -> sp.csr_matrix:
    """``X`` (sparse, or dense 2-D) as a float64 csr node x feature matrix (a copy when
    it converts)."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"X: expected a 2-D node x feature matrix, got {arr.ndim}-D")
    return sp.csr_matrix(arr)


def check_node_features(X, n: int) -> sp.csr_matrix:
    """``X`` as the float64 csr node features BMGUFS selects among (no stored zeros).

    Parameters
    ----------
    X : sparse or dense matrix, shape (n, f)
        Node features.
    n : int
        Nodes of the graph.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, f)

    Raises
    ------
    ValueError
        When ``X`` is missing, has another number of rows or no columns, holds NaN or
        negative values, or is all zero.
    """
    if X is None:
        raise ValueError("X: the node feature matrix is missing")
    Y = _as_node_features(X)
    if Y.shape[0] != n:
        raise ValueError(f"X: has {Y.shape[0]} rows but the graph has {n} nodes")
    if Y.shape[1] < 1:
        raise ValueError("X: has no feature columns")
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if Y.nnz and not np.all(np.isfinite(Y.data)):
        raise ValueError("X: contains NaN or infinite values")
    if Y.nnz and Y.data.min() < 0:
        raise ValueError("X: BMGUFS needs non-negative node features (counts, 0/1, tf-idf)")
    if Y.nnz == 0:
        raise ValueError("X: all node features are zero")
    return Y
