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

    The squared norms are the row sums of ``X.multiply(X)`` and each row is multiplied by
    the float32 inverse of its norm; entries that come out zero are dropped (as a sparse
    product drops them). A canonical float32 ``X`` with no zero square and no zero result
    (the common case) is scaled in place of a copy of its data -- one multiplication per
    non-zero, the structure kept -- instead of as the product ``diag(inv) @ X`` and a
    sort: the same bits at a fraction of the CPU (one fit normalises its rows once, every
    ``predict_scores`` call again). Other inputs take the product.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Any csr matrix.

    Returns
    -------
    scipy.sparse.csr_matrix
        float32, sorted indices.
    """
    if X.dtype == np.float32 and X.has_canonical_format:
        with np.errstate(over="ignore", under="ignore"):   # such entries take the product
            sq_data = X.data * X.data
        if sq_data.all() and np.isfinite(sq_data).all():
            # X.multiply(X) has exactly this structure and these values: no square is 0
            sq = np.asarray(sp.csr_matrix((sq_data, X.indices, X.indptr), shape=X.shape)
                            .sum(axis=1)).ravel()
            inv = _inverse_norms(sq)
            with np.errstate(under="ignore"):
                data = X.data * np.repeat(inv, np.diff(X.indptr))
            if data.all():
                out = sp.csr_matrix((data, X.indices.copy(), X.indptr.copy()),
                                    shape=X.shape)
                out.has_sorted_indices = True
                return out
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    out = sp.csr_matrix(sp.diags(_inverse_norms(sq)) @ X, dtype=np.float32)
    out.sort_indices()
    return out


def _inverse_norms(sq: np.ndarray) -> np.ndarray:
    """float32 ``1 / sqrt(sq)`` where ``sq > 0``, else 0."""
    inv = np.zeros_like(sq)
    nz = sq > 0
    inv[nz] = 1.0 / np.sqrt(sq[nz])
    return inv.astype(np.float32)
