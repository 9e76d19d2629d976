"""numba kernels for BMGUFS (block models and block-model-guided feature selection).

Arrays in, arrays out; no Python objects. Sparse matrices arrive as their CSR parts
(``indptr``, ``indices``, ``data``).
"""
import numpy as np
from numba import njit, prange

from featagg_core._kernels._common import count_and_reset, scatter_add_row
from featagg_core._kernels.stopflag import stop_requested


@njit(cache=True, nogil=True)
def csr_times_dense(indptr, indices, data, B):
    """``A @ B`` for a CSR ``A`` (n x m) and a dense C-contiguous ``B`` (m x k)."""
    n = indptr.shape[0] - 1
    k = B.shape[1]
    out = np.zeros((n, k))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            v = data[p]
            for c in range(k):
                out[i, c] += v * B[j, c]
    return out


@njit(cache=True, nogil=True)
def onmtf_symmetric(indptr, indices, data, norm_a2, F, S, n_iter, eps, stop):
    """Symmetric orthogonal non-negative tri-factorisation ``A ~ F S F^T``.

    Ding, Li, Peng & Park (KDD 2006) multiplicative updates for the symmetric case
    (``G = F``), F first, then S::

        F <- F * ( (A F S) / (F F^T A F S) ) ** (1/4)
        S <- S * sqrt( (F^T A F) / (F^T F S F^T F) )

    ``F`` (n x k) and ``S`` (k x k) are updated in place. Returns the objective
    ``||A - F S F^T||_F^2`` before the first and after every kept iteration. The updates
    descend a Lagrangian that includes the orthogonality constraint, so close to a
    partition the plain objective can creep up; the first update that would raise it is
    undone and the run stops there (so the returned history is non-increasing and has
    length ``iterations + 1 <= n_iter + 1``). The objective uses the trace identity
    ``||A||^2 - 2 tr(F^T A F S) + tr(S F^T F S F^T F)`` so nothing n x n is formed.
    ``stop`` (one-element uint8 array) is read before every update: once another thread
    sets it to 1 the run ends there (the caller discards F and S).
    """
    n, k = F.shape
    history = np.empty(n_iter + 1)
    AF = csr_times_dense(indptr, indices, data, F)
    F_prev = F.copy()
    S_prev = S.copy()
    for it in range(n_iter + 1):
        FtF = F.T @ F
        FtAF = F.T @ AF
        # objective of the current (F, S)
        t1 = 0.0
        for a in range(k):
            for b in range(k):
                t1 += FtAF[a, b] * S[b, a]
        SF = S @ FtF
        t2 = 0.0
        SFSF = SF @ SF
        for a in range(k):
            t2 += SFSF[a, a]
        history[it] = max(norm_a2 - 2.0 * t1 + t2, 0.0)
        if it > 0 and history[it] > history[it - 1]:
            F[:, :] = F_prev
            S[:, :] = S_prev
            return history[:it].copy()
        if it == n_iter:
            break
        if stop_requested(stop):
            return history[:it + 1].copy()
        F_prev[:, :] = F
        S_prev[:, :] = S
        # F update (with the current S), then S update (with the new F): this order kept
        # the objective monotone in every trial we ran; S-first did not always.
        AFS = AF @ S
        FtAFS = F.T @ AFS
        den_f = F @ FtAFS
        for i in range(n):
            for c in range(k):
                F[i, c] *= (AFS[i, c] / max(den_f[i, c], eps)) ** 0.25
        AF = csr_times_dense(indptr, indices, data, F)
        FtF = F.T @ F
        FtAF = F.T @ AF
        den = FtF @ S @ FtF
        for a in range(k):
            for b in range(k):
                S[a, b] *= np.sqrt(FtAF[a, b] / max(den[a, b], eps))
    return history


@njit(cache=True, nogil=True)
def block_edge_sums(indptr, indices, data, labels, k):
    """``B = F^T A F`` for the binary membership ``F`` given by ``labels``: B[a, b] is the
    total edge weight between blocks a and b."""
    n = indptr.shape[0] - 1
    B = np.zeros((k, k))
    for i in range(n):
        a = labels[i]
        for p in range(indptr[i], indptr[i + 1]):
            B[a, labels[indices[p]]] += data[p]
    return B


@njit(cache=True, nogil=True)
def block_feature_sums(indptr, indices, data, labels, k, f):
    """``F^T Y`` (k x f) for a CSR ``Y`` (n x f) and the binary membership ``labels``."""
    n = indptr.shape[0] - 1
    out = np.zeros((k, f))
    for i in range(n):
        a = labels[i]
        for p in range(indptr[i], indptr[i + 1]):
            out[a, indices[p]] += data[p]
    return out


@njit(cache=True, nogil=True)
def sym_matvec_active(indptr, indices, data, r, active):
    """``H @ r`` for a symmetric CSR ``H`` when ``r`` is zero outside ``active``.

    Uses the rows of the active features only (``H r = sum_m r_m H[m, :]``), so the cost
    shrinks as the weights become sparse.
    """
    out = np.zeros(r.shape[0])
    for q in range(active.shape[0]):
        m = active[q]
        rm = r[m]
        for p in range(indptr[m], indptr[m + 1]):
            out[indices[p]] += rm * data[p]
    return out


@njit(cache=True, nogil=True)
def quad_diag_csr(a_indptr, a_indices, a_data, x_indptr, x_indices, x_data, f):
    """``diag(X^T A X)`` (length f) for CSR ``A`` (n x n) and CSR ``X`` (n x f) without
    forming ``A X``: a dense scatter of row i of X, then a pass over i's neighbours."""
    n = a_indptr.shape[0] - 1
    out = np.zeros(f)
    w = np.zeros(f)
    for i in range(n):
        s, e = x_indptr[i], x_indptr[i + 1]
        if s == e:
            continue
        for p in range(s, e):
            w[x_indices[p]] = x_data[p]
        for q in range(a_indptr[i], a_indptr[i + 1]):
            j = a_indices[q]
            av = a_data[q]
            for p in range(x_indptr[j], x_indptr[j + 1]):
                l = x_indices[p]
                wl = w[l]
                if wl != 0.0:
                    out[l] += av * wl * x_data[p]
        for p in range(s, e):
            w[x_indices[p]] = 0.0
    return out


# ---------------------------------------------------------------------------
# H = (Y^T Y) o (Y^T Y) and its mat-vec (the L_b normaliser of the selection)
# ---------------------------------------------------------------------------
#: fixed number of work chunks: the partition (hence every floating-point sum) does not
#: depend on how many threads run them
N_CHUNKS = 64


@njit(cache=True, nogil=True)
def _gram_row(l, yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, acc, seen,
              touched):
    """Row l of G = Y^T Y into the dense accumulator ``acc`` (Gustavson): the sum over the
    nodes i having feature l of Y_il * row_i(Y). Returns how many entries were touched."""
    nt = 0
    for q in range(yt_indptr[l], yt_indptr[l + 1]):
        i = yt_indices[q]
        nt = scatter_add_row(acc, seen, touched, nt, yt_data[q], y_indptr[i], y_indptr[i + 1],
                             y_indices, y_data)
    return nt


@njit(cache=True, nogil=True, parallel=True)
def _gram_squared_pass(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f, fill,
                       counts, indptr, indices, data):
    """One pass over the rows of ``H = G o G``, by chunks of rows: without ``fill`` the entries
    per row into ``counts``, with ``fill`` the sorted indices and values ``G_lm^2`` into
    ``indices`` / ``data`` at the row pointers ``indptr``."""
    csize = (f + N_CHUNKS - 1) // N_CHUNKS
    for ch in prange(N_CHUNKS):
        lo = ch * csize
        hi = min(f, lo + csize)
        if lo >= hi:
            continue
        acc = np.zeros(f)
        seen = np.zeros(f, np.bool_)
        touched = np.empty(f, np.int64)
        for l in range(lo, hi):
            nt = _gram_row(l, yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data,
                           acc, seen, touched)
            if not fill:
                counts[l] = count_and_reset(acc, seen, touched, nt)
                continue
            loc = np.sort(touched[:nt])
            pos = indptr[l]
            for t in range(nt):
                m = loc[t]
                v = acc[m]
                if v != 0.0:
                    indices[pos] = m
                    data[pos] = v * v
                    pos += 1
                acc[m] = 0.0
                seen[m] = False


@njit(cache=True, nogil=True)
def gram_squared_counts(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f):
    """Entries per row of ``H = G o G`` (``G = Y^T Y``): the symbolic pass (also used to
    tell the memory H needs before it is built). ``Y`` arrives as CSR (``y_*``, n x f)
    and as its transpose (``yt_*``, f x n)."""
    counts = np.zeros(f, np.int64)
    _gram_squared_pass(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f, False,
                       counts, np.zeros(1, np.int64), np.empty(0, np.int32),
                       np.empty(0, np.float64))
    return counts


@njit(cache=True, nogil=True)
def gram_squared_fill(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f,
                      indptr):
    """CSR parts (indices sorted in each row, values ``G_lm^2``) of ``H = G o G`` with the
    row pointers ``indptr`` from :func:`gram_squared_counts`. Each row is computed by one
    chunk, so the values do not depend on the thread count."""
    indices = np.empty(indptr[f], np.int32)
    data = np.empty(indptr[f], np.float64)
    _gram_squared_pass(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f, True,
                       np.zeros(0, np.int64), indptr, indices, data)
    return indices, data


@njit(cache=True, nogil=True, parallel=True)
def gram_squared_dense(yt_indptr, yt_indices, yt_data, y_indptr, y_indices, y_data, f):
    """``H = G o G`` (``G = Y^T Y``) as a dense f x f array, for when H is mostly full (it
    then takes less memory dense than as CSR). Each row is summed by one chunk in node
    order, so the values do not depend on the thread count."""
    H = np.zeros((f, f))
    csize = (f + N_CHUNKS - 1) // N_CHUNKS
    for ch in prange(N_CHUNKS):
        for l in range(ch * csize, min(f, (ch + 1) * csize)):
            row = H[l]
            for q in range(yt_indptr[l], yt_indptr[l + 1]):
                i = yt_indices[q]
                v = yt_data[q]
                for p in range(y_indptr[i], y_indptr[i + 1]):
                    row[y_indices[p]] += v * y_data[p]
            for m in range(f):
                row[m] *= row[m]
    return H


@njit(cache=True, nogil=True)
def dense_sym_matvec_active(H, r, active):
    """``H @ r`` for a dense symmetric ``H`` when ``r`` is zero outside ``active``: the
    sum of ``r_m H[m, :]`` over the active rows (contiguous rows, so the inner loop
    vectorises). Serial: it runs every iteration, and parallel regions that short cost
    more than they save on a busy machine."""
    f = r.shape[0]
    out = np.zeros(f)
    for q in range(active.shape[0]):
        m = active[q]
        rm = r[m]
        row = H[m]
        for l in range(f):
            out[l] += rm * row[l]
    return out


@njit(cache=True, nogil=True)
def weighted_gram(Vt, r, active):
    """``K = V diag(r) V^T`` (k x k) from ``Vt = V^T`` (f x k, C order) and the features
    where ``r`` is non-zero."""
    k = Vt.shape[1]
    K = np.zeros((k, k))
    for q in range(active.shape[0]):
        l = active[q]
        rl = r[l]
        for a in range(k):
            va = rl * Vt[l, a]
            for b in range(k):
                K[a, b] += va * Vt[l, b]
    return K


@njit(cache=True, nogil=True)
def quad_diag(Vt, K):
    """``out_l = v_l^T K v_l`` for every row ``v_l`` of ``Vt`` (f x k): the diagonal of
    ``V^T K V`` without forming it."""
    f, k = Vt.shape
    out = np.empty(f)
    for l in range(f):
        s = 0.0
        for a in range(k):
            acc = 0.0
            for b in range(k):
                acc += K[a, b] * Vt[l, b]
            s += Vt[l, a] * acc
        out[l] = s
    return out
