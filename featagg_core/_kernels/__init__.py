"""numba kernels: ``@njit(cache=True)`` functions that take arrays and return arrays.

No Python objects cross this boundary; long-running kernels release the GIL
(``nogil=True``) so that one dashboard can serve many sessions at once.

Helpers used by more than one kernel live in ``_common.py`` (binary search, sparse
row accumulation, the random generators, the text line scanner); a kernel keeps a
private copy of one only where a benchmark shows the shared one slower. After editing
``_common.py`` clear the numba cache: numba does not notice that a caller in another
file depends on it.

``PARALLEL`` is the ``parallel=`` flag of the chunk-parallel kernels (``prange`` over
chunks; results never depend on the thread count). It is True unless the environment has
``FEATAGG_PARALLEL_KERNELS=0`` when the kernels are first imported: the dashboard server sets
that (``featagg_app.server.serve``) because its job runner gives every job one thread on a machine
whose cores are all busy with jobs, where ``prange`` cannot pay, while numba compiles a
parallel kernel several times slower than a serial one (benchmarks/results/cold_start.md). The
server then keeps its compiled kernels in its own ``NUMBA_CACHE_DIR``, since numba's cache
index does not tell the two variants apart.
"""
import os

PARALLEL = os.environ.get("FEATAGG_PARALLEL_KERNELS", "1").strip() != "0"
