"""What KTXMLC's estimators accept: the parameter constraints they declare, the checks of
``X`` and ``Y`` at their boundary, and the L2 row normalisation applied to ``X``.

Shared by :mod:`featagg_core.xmlc.ktxmlc`, :mod:`featagg_core.xmlc.label_vectors`,
:mod:`featagg_core.xmlc.selection` and the Dask twin (``featagg_core.distributed.ktxmlc``),
so every path refuses the same inputs with the same messages.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.validation import (
    Interval,
    as_csr,
    check_binary_labels,
    check_n_features,
)

#: the constraint "a real number > 0" (:mod:`featagg_core.utils.validation`)
POSITIVE = [Interval(Real, 0, None, closed="neither")]
#: the constraint "a real number >= 0"
NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]


def int_from(low: int, allow_none: bool = False) -> list:
    """The constraint "an integer >= low" (or None).

    Parameters
    ----------
    low : int
        The smallest value allowed.
    allow_none : bool, default=False
        Whether None is allowed too.

    Returns
    -------
    list
        A constraint list for :func:`featagg_core.utils.validation.validate_params`.
    """
    interval = Interval(Integral, low, None, closed="left")
    return [interval, None] if allow_none else [interval]


def check_X(X, name="X", n_features=None) -> sp.csr_matrix:
    """The shared float32 canonical csr (:func:`featagg_core.utils.validation.as_csr`), plus
    KTXMLC's refusal of a matrix without rows (checked before the feature count).

    Parameters
    ----------
    X : sparse or dense matrix, shape (n, d)
        Features.
    name : str, default="X"
        The argument's name in messages.
    n_features : int or None, default=None
        The number of columns required (a fitted model's ``n_features_in_``).

    Returns
    -------
    scipy.sparse.csr_matrix
        float32, canonical.

    Raises
    ------
    ValueError
        For a matrix without rows, with NaN, or with another number of columns.
    """
    X = as_csr(X, name, dtype=np.float32)
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    check_n_features(X, name, n_features)
    return X


def n_label_columns(Y) -> int:
    """Number of label columns of ``Y`` (validated later, in the fit).

    Parameters
    ----------
    Y : sparse or dense matrix or array-like
        Labels.

    Returns
    -------
    int
        Its last dimension.
    """
    shape = getattr(Y, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else np.asarray(Y).shape[-1]


def check_Y(Y, n_rows) -> sp.csr_matrix:
    """``Y`` as a float32 csr of 0/1 with ``n_rows`` rows.

    Parameters
    ----------
    Y : sparse or dense matrix, shape (n_rows, L)
        Labels.
    n_rows : int
        The rows of the matching ``X``.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32 0/1.

    Raises
    ------
    ValueError
        For entries other than 0/1 or another number of rows.
    """
    return check_binary_labels(Y, n_rows, "Y", dtype=np.float32)


def normalize_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Rows scaled to unit L2 norm (zero rows stay zero); a new float32 csr.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Any csr matrix.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32, sorted indices.
    """
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    inv = np.zeros_like(sq)
    nz = sq > 0
    inv[nz] = 1.0 / np.sqrt(sq[nz])
    out = sp.csr_matrix(sp.diags(inv.astype(np.float32)) @ X, dtype=np.float32)
    out.sort_indices()
    return out
