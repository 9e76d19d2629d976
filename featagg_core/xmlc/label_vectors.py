"""The label vectors KTXMLC clusters into label trees: PIFA vectors (the normalised sum of
a label's positive rows) and, optionally, its co-occurrence row of YᵀY appended.

Label vectors are exact products (:func:`featagg_core.utils.products.exact_xt_y`), and
:func:`joint_vectors` is row-local, so the Dask twin (``featagg_core.distributed.ktxmlc``)
builds the same vectors per label range.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.products import exact_xt_y
from featagg_core.utils.validation import Options, check_param
from featagg_core.xmlc import tree_fitting as core
from featagg_core.xmlc.inputs import NON_NEGATIVE, check_X, check_Y, normalize_rows


def label_representation(X, Y, representation="input", joint_weight=1.0, progress=None):
    """Label vectors used to cluster labels (rows L2-normalised, csr L x d').

    ``"input"``: the normalised sum of the normalised feature vectors of the label's
    positive points (Parabel / omikuji, PECOS's PIFA). ``"joint"``: that vector,
    concatenated with ``joint_weight`` times the label's normalised co-occurrence row of
    YᵀY, renormalised.

    Parameters
    ----------
    X : sparse or dense matrix, shape (n, d)
        Features (rows are L2-normalised here).
    Y : sparse or dense 0/1 matrix, shape (n, L)
        Labels.
    representation : {"input", "joint"}, default="input"
        Which label vectors (see above).
    joint_weight : float >= 0, default=1.0
        Weight of the co-occurrence part of ``"joint"`` vectors (unused for ``"input"``).
    progress : callable(fraction, message), optional
        Called per block of labels (fractions 0 to 0.02, the share of a KTXMLC fit); it
        may raise to stop.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (L, d) or (L, d + L)
        One L2-normalised row per label (float32).

    Raises
    ------
    ValueError
        For a bad ``X``/``Y`` or an unknown ``representation`` / negative ``joint_weight``.
    """
    X = check_X(X)
    Y = check_Y(Y, X.shape[0])
    check_param("representation", representation, [Options(str, {"input", "joint"})])
    report = None
    if progress is not None:
        def report(j, n):
            progress(0.02 * j / n, f"label representations: block {j}/{n}")
    R = core.label_representation(normalize_rows(X), Y, report)
    if representation == "joint":
        w = float(check_param("joint_weight", joint_weight, NON_NEGATIVE))
        R = joint_vectors(R, exact_xt_y(Y, Y), w)
    return R


def joint_vectors(R, YtY, joint_weight):
    """The ``"joint"`` label vectors of the labels of ``R``'s rows from their PIFA rows
    ``R`` and rows of ``YᵀY`` (row-local, so the Dask twin builds them per label range).

    Parameters
    ----------
    R : scipy.sparse.csr_matrix, shape (m, d)
        PIFA vectors of m labels.
    YtY : sparse matrix, shape (m, L)
        The same labels' rows of YᵀY.
    joint_weight : float
        Weight of the co-occurrence part.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (m, d + L)
        L2-normalised rows (float32, int64 ``indptr``).
    """
    C = normalize_rows(sp.csr_matrix(YtY, dtype=np.float32))
    R = normalize_rows(sp.hstack([R, C * np.float32(joint_weight)], format="csr"))
    R.indptr = R.indptr.astype(np.int64)
    return R
