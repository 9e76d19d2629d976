"""Small numba helpers shared by the kernels of this package.

Every helper is ``@njit(cache=True, nogil=True)`` and is called from other kernels (numba
compiles a call to another ``@njit`` function into the caller and LLVM inlines such small
bodies, so the shared helper costs the same as the copy it replaces; see
``benchmarks/kernel_helpers_bench.py``).

Caching: a caller's cache entry holds the helper's code compiled into it, and numba
invalidates an entry only when the *caller's* file changes (numba issue #1833, "Cache
invalidation fails to recognize changes in functions defined in a different file" in its
docs). Editing this file therefore leaves the kernels of the other files running the old
helper from an existing cache: clear ``NUMBA_CACHE_DIR`` (or the ``__pycache__/*.nbi``,
``*.nbc`` files) after changing a helper here. A fresh cache (CI) is always right.

Searching
    :func:`lower_bound` -- binary search in a sorted slice (metrics, KTXMLC beam search,
    FIAT's block Gram).

Sparse accumulation
    :func:`count_row_cols` -- the symbolic pass of one row of ``Aᵀ B`` (DEFRAG's ``Xᵀ Y``,
    the exact ``Aᵀ B`` of :mod:`featagg_core.utils.products`); :func:`scatter_add_row` -- adds
    ``v * row`` of a csr matrix into a dense accumulator, recording the columns touched
    (Gustavson's row-by-row product: DEFRAG's ``Xᵀ Y``, BMGUFS's Gram rows, REFRAG's
    prototype cosines, KTXMLC's cluster centroids); :func:`count_and_reset` and
    :func:`reset_touched` -- reading back / clearing only the touched entries of such an
    accumulator (BMGUFS, FIAT, REFRAG).

Random numbers (no global numba RNG state: every stream comes from the caller's seed, so
results never depend on the thread or the call order). Three generators remain, each
because the results of its users depend on its exact stream (tests and benchmarks
compare those results with published or stored numbers):

* splitmix64 (Steele, Lea & Flood 2014): :func:`mix64` is its finaliser (a bijective
  64-bit hash: the parser's hash-table slots), :func:`splitmix64` one step of the
  generator (state += golden gamma, output = finaliser of the new state): vocabulary
  compression's stochastic greedy draws from the stream, DEFRAG hashes ``(seed, node)``
  with single steps to pick a node's first centres.
* MINSTD, Park & Miller's "minimal standard" with multiplier 48271 (Park, Miller &
  Stockmeyer 1993): :func:`minstd_seed`, :func:`minstd_next`, :func:`minstd_uniform` --
  the k-means|| / 2-means seeding of KTXMLC's label trees, and the seed of
  :func:`xorshift64s_seed`. Replacing it would change every tree (and so every KTXMLC /
  REFRAG / FIAT number of the benchmarks).
* xorshift64* (Vigna 2016, the 12/25/27 triple with the 2685821657736338717 multiplier,
  high 32 bits): :func:`xorshift64s_next`, seeded by :func:`xorshift64s_seed` -- the
  coordinate order of the linear solvers (``linear.shuffle_prefix``, as liblinear shuffles
  its coordinates). Another stream visits coordinates in another order and stops at other
  (equally converged) weights.

Text scanning (the readers of ``parse.py``)
    :func:`is_ws`, :func:`skip_ws`, :func:`count_bytes` (the sizing pass) and
    :func:`next_line` (the lead-in of every line loop: the line's end, its end before a
    comment character, its first non-blank byte and whether it is blank or a comment).
"""
import numpy as np
from numba import njit

# ---------------------------------------------------------------------------- searching


@njit(cache=True, nogil=True)
def lower_bound(a, lo, hi, v):
    """First position p in ``a[lo:hi]`` (sorted ascending) with ``a[p] >= v``; ``hi`` when
    there is none (as C++'s ``std::lower_bound``)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ------------------------------------------------------------------ sparse accumulation


@njit(cache=True, nogil=True)
def count_row_cols(j, a_ptr, a_ind, b_ptr, b_ind, stamp):
    """Number of distinct columns of row ``j`` of ``Aᵀ B`` (``a_*``: ``Aᵀ`` in csr, ``b_*``:
    ``B`` in csr): the columns of the rows of B listed in row j of Aᵀ. ``stamp`` (one entry
    per column of B, never equal to ``j`` before) marks the columns seen."""
    cnt = 0
    for p in range(a_ptr[j], a_ptr[j + 1]):
        i = a_ind[p]
        for q in range(b_ptr[i], b_ptr[i + 1]):
            col = b_ind[q]
            if stamp[col] != j:
                stamp[col] = j
                cnt += 1
    return cnt


@njit(cache=True, nogil=True)
def scatter_add_row(acc, seen, touched, nt, v, lo, hi, ind, dat):
    """``acc[ind[p]] += v * dat[p]`` for p in ``lo:hi`` (one csr row scaled by ``v``).

    A column met for the first time (``seen`` false) is marked and appended to
    ``touched[nt:]`` so the caller can read and reset only those entries. Returns the new
    number of touched columns. The product is ``v * dat[p]`` in the types given (pass ``v``
    as float64 to get a float64 product from float32 data)."""
    for p in range(lo, hi):
        m = ind[p]
        if not seen[m]:
            seen[m] = True
            touched[nt] = m
            nt += 1
        acc[m] += v * dat[p]
    return nt


@njit(cache=True, nogil=True)
def count_and_reset(acc, seen, touched, nt):
    """How many of the ``nt`` touched entries of ``acc`` are non-zero (the symbolic pass of a
    two-pass product: cancellations leave no stored zero); resets them (``acc`` to 0,
    ``seen`` to false) for the next row."""
    c = 0
    for t in range(nt):
        m = touched[t]
        if acc[m] != 0.0:
            c += 1
        acc[m] = 0.0
        seen[m] = False
    return c


@njit(cache=True, nogil=True)
def reset_touched(acc, seen, touched, nt):
    """Set the ``nt`` touched entries of ``acc`` back to 0 and of ``seen`` to false."""
    for t in range(nt):
        m = touched[t]
        acc[m] = 0.0
        seen[m] = False


# ------------------------------------------------------------------------ random numbers

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SM_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SM_M2 = np.uint64(0x94D049BB133111EB)
_MINSTD_MODULUS = 2147483647
_XS_MULT = np.uint64(2685821657736338717)


@njit(cache=True, nogil=True)
def mix64(z):
    """splitmix64's finaliser: a bijective 64-bit hash of the uint64 ``z``."""
    z = (z ^ (z >> np.uint64(30))) * _SM_M1
    z = (z ^ (z >> np.uint64(27))) * _SM_M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def splitmix64(state):
    """One splitmix64 step: returns ``(new state, 64-bit output)`` for the uint64 ``state``."""
    z = state + _GOLDEN
    return z, mix64(z)


@njit(cache=True, nogil=True)
def minstd_seed(seed):
    """A valid MINSTD (Park-Miller) state, 1 .. 2^31-2, from any integer seed."""
    s = (seed * 2654435761 + 12345) % _MINSTD_MODULUS
    if s <= 0:
        s += _MINSTD_MODULUS - 1
    return s


@njit(cache=True, nogil=True)
def minstd_next(s):
    """The next MINSTD state: ``48271 s mod (2^31 - 1)``."""
    return (s * 48271) % _MINSTD_MODULUS


@njit(cache=True, nogil=True)
def minstd_uniform(state):
    """One MINSTD draw: ``(new state, u)`` with ``u`` uniform in [0, 1)."""
    state = minstd_next(state)
    return state, (state - 1) / (_MINSTD_MODULUS - 1.0)


@njit(cache=True, nogil=True)
def xorshift64s_seed(seed):
    """A non-zero uint64 xorshift64* state from any integer seed (via :func:`minstd_seed`)."""
    return np.uint64(minstd_seed(seed)) * _GOLDEN | np.uint64(1)


@njit(cache=True, nogil=True)
def xorshift64s_next(state):
    """One xorshift64* step: ``(new state, r)`` with ``r`` the high 32 bits of the scrambled
    output (a uint64 below 2^32)."""
    state ^= state >> np.uint64(12)
    state ^= state << np.uint64(25)
    state ^= state >> np.uint64(27)
    return state, (state * _XS_MULT) >> np.uint64(32)


# ------------------------------------------------------------------------- text scanning


@njit(cache=True, nogil=True)
def is_ws(c):
    """Blank inside a line: space, tab, CR, VT, FF (not the newline, which ends a line)."""
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def skip_ws(buf, p, end):
    """The first position at or after ``p`` (before ``end``) that is not :func:`is_ws`."""
    while p < end and is_ws(buf[p]):
        p += 1
    return p


@njit(cache=True, nogil=True)
def count_bytes(buf, start, a, b):
    """``(newlines, count of byte a, count of byte b)`` in ``buf[start:]`` in one pass (the
    sizing pass of the readers; pass -1 for a byte that is not needed)."""
    nl = 0
    na = 0
    nb = 0
    for i in range(start, buf.shape[0]):
        c = buf[i]
        if c == 10:
            nl += 1
        elif c == a:
            na += 1
        elif c == b:
            nb += 1
    return nl, na, nb


@njit(cache=True, nogil=True)
def next_line(buf, pos, cut, comment_a, comment_b):
    """Scan the line that starts at ``buf[pos]``.

    ``cut``: a byte that ends the line's content wherever it stands (svmlight's ``#``), or
    -1. ``comment_a`` / ``comment_b``: bytes that make the line a comment when they are its
    first non-blank byte (ARFF's ``%``, edge lists' ``#`` and ``%``), or -1.

    Returns ``(eol, end, p, skip)``: the position of the newline (or ``len(buf)``), the end
    of the content (``eol`` or the ``cut`` byte), the first non-blank position before
    ``end``, and whether the line is blank or a comment. The caller goes on at ``eol + 1``.
    """
    n = buf.shape[0]
    eol = pos
    while eol < n and buf[eol] != 10:
        eol += 1
    end = eol
    if cut >= 0:
        j = pos
        while j < end and buf[j] != cut:
            j += 1
        end = j
    p = skip_ws(buf, pos, end)
    skip = p == end or buf[p] == comment_a or buf[p] == comment_b
    return eol, end, p, skip
