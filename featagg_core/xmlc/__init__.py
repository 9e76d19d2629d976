"""KTXMLC, the extreme multi-label classifier (Prajapati & Thakkar, 2021).

``ktxmlc`` (the estimators KTXMLC, OneVsAll, DefragKTXMLC), ``inputs`` (their parameter
constraints, the checks of X and Y, row normalisation), ``label_vectors`` (the label vectors
clustered into trees), ``tree_fitting`` (a fit as plain functions of arrays: the seam the
Dask twin reuses), ``threaded_fit`` (that fit on a local thread pool), ``artifact_state``
(how a fitted tree model is saved and rebuilt) and ``selection`` (choosing K and d0 from the
data).
"""
