"""KTXMLC, the extreme multi-label classifier (Prajapati & Thakkar, 2021).

``ktxmlc`` (the estimators KTXMLC, OneVsAll, DefragKTXMLC), ``tree_fitting`` (a fit as plain
functions of arrays: the seam the Dask twin reuses), ``selection`` (choosing K and d0 from
the data), and the parts of the estimators named by their own modules.
"""
