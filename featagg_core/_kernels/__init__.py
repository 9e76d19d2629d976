"""numba kernels: ``@njit(cache=True)`` functions that take arrays and return arrays.

No Python objects cross this boundary; long-running kernels release the GIL
(``nogil=True``) so that one dashboard can serve many sessions at once.
"""
