"""numba kernels of the data-health checks (``featagg_core.health``).

Row hashing (exact duplicates, conflicting labels, exact train/test overlap)
    :func:`row_hashes` -- a 64-bit hash of each csr row's (column, value) pairs;
    :func:`group_equal_rows` -- for rows sorted by that hash, the smallest row index each
    row is *exactly* equal to (hash collisions are resolved by comparing the rows).

Near-duplicates (train/test overlap at cosine >= a threshold)
    :func:`simhash_signatures` -- Charikar's random-hyperplane signatures (SimHash) of the
    weighted rows, one bit per hyperplane, with the hyperplanes' coordinates drawn from a
    hash of (seed, column, word) so nothing of size d x bits is stored;
    :func:`verify_band_runs` -- the candidate pairs of one band (rows whose band bits are
    equal), each verified by its exact cosine; a run larger than ``max_group`` is
    compared only within a window of ``window`` positions in its sorted order, so one
    giant bucket costs ``O(run * window)``, never ``O(run^2)``.

Every kernel is linear in the non-zeros it reads (plus the bounded candidate work).
"""
import numpy as np
from numba import njit

from featagg_core._kernels._common import mix64

_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)


@njit(cache=True, nogil=True)
def row_hashes(indptr, indices, vbits, use_values, seed):
    """64-bit hash of every csr row: its columns (and the bit patterns ``vbits`` of its
    values when ``use_values``) folded in order with splitmix64's finaliser.

    ``vbits`` is the float32 data viewed as uint32 (empty when not ``use_values``); rows
    must have sorted columns and no explicit zeros so equal rows give equal hashes.
    """
    n = indptr.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    s = mix64(np.uint64(seed) + _K1)
    for i in range(n):
        h = s ^ np.uint64(indptr[i + 1] - indptr[i])
        for p in range(indptr[i], indptr[i + 1]):
            h = mix64(h ^ (np.uint64(indices[p]) * _K1))
            if use_values:
                h = mix64(h ^ (np.uint64(vbits[p]) * _K2))
        out[i] = mix64(h)
    return out


@njit(cache=True, nogil=True)
def _rows_equal(a, b, indptr, indices, vbits, use_values):
    la = indptr[a + 1] - indptr[a]
    if la != indptr[b + 1] - indptr[b]:
        return False
    pa = indptr[a]
    pb = indptr[b]
    for t in range(la):
        if indices[pa + t] != indices[pb + t]:
            return False
        if use_values and vbits[pa + t] != vbits[pb + t]:
            return False
    return True


@njit(cache=True, nogil=True)
def group_equal_rows(order, hashes, x_ptr, x_ind, x_bits, x_vals, y_ptr, y_ind, use_y):
    """The representative of every row: the smallest row index exactly equal to it.

    ``order`` sorts ``hashes`` (stably, so equal hashes keep row order); within a run of
    equal hashes each row is compared with the run's distinct representatives so far --
    its features (columns and, when ``x_vals``, value bits) and, when ``use_y``, its label
    columns. A run holds one class unless 64-bit hashes collide, so the work is linear.
    """
    n = order.shape[0]
    rep = np.empty(n, dtype=np.int64)
    reps = np.empty(n, dtype=np.int64)
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and hashes[order[stop]] == hashes[order[start]]:
            stop += 1
        n_reps = 0
        for t in range(start, stop):
            i = order[t]
            found = -1
            for r in range(n_reps):
                j = reps[r]
                if _rows_equal(i, j, x_ptr, x_ind, x_bits, x_vals) and \
                        (not use_y or _rows_equal(i, j, y_ptr, y_ind, x_bits, False)):
                    found = j
                    break
            if found < 0:
                reps[n_reps] = i
                n_reps += 1
                rep[i] = i
            else:
                rep[i] = found          # rows of a run come in row order: found < i
        start = stop
    return rep


@njit(cache=True, nogil=True)
def simhash_signatures(indptr, indices, data, n_words, seed):
    """SimHash signatures: ``n_words`` x 64 bits per row, bit b = sign of the row's dot
    product with hyperplane b (Charikar 2002).

    Hyperplane b's coordinate for column j is ``byte - 127.5``, one byte of a 64-bit
    stream seeded by ``mix64(seed, j, word)`` and advanced by xorshift64 every 8 bytes:
    256 levels, never 0. Not +-1: with +-1 coordinates a row of an even number of equal
    values (binary features) projects to exactly 0 on many hyperplanes, and any noise on a
    copy of it then flips those bits at random, so near-copies of binary rows were missed
    (benchmarks/results/health_notes.md). Two rows at angle theta differ in each bit
    with probability theta / pi; the signature is invariant to a row's scale, so it
    describes the L2-normalised row.
    """
    n = indptr.shape[0] - 1
    sig = np.zeros((n, n_words), dtype=np.uint64)
    acc = np.zeros(64, dtype=np.float64)
    base = mix64(np.uint64(seed) ^ _K2)
    for i in range(n):
        for w in range(n_words):
            for b in range(64):
                acc[b] = 0.0
            ws = mix64(base + np.uint64(w) * _K1)
            for p in range(indptr[i], indptr[i + 1]):
                h = mix64(ws ^ (np.uint64(indices[p]) * _K2))
                v = np.float64(data[p])
                for c in range(8):
                    for q in range(8):
                        coord = np.float64((h >> np.uint64(8 * q)) & np.uint64(0xFF)) - 127.5
                        acc[8 * c + q] += v * coord
                    h ^= h << np.uint64(13)
                    h ^= h >> np.uint64(7)
                    h ^= h << np.uint64(17)
            word = np.uint64(0)
            for b in range(64):
                if acc[b] > 0.0:
                    word |= np.uint64(1) << np.uint64(b)
            sig[i, w] = word
    return sig


@njit(cache=True, nogil=True)
def _cosine(a, b, indptr, indices, data, norms):
    pa, ea = indptr[a], indptr[a + 1]
    pb, eb = indptr[b], indptr[b + 1]
    s = 0.0
    while pa < ea and pb < eb:
        ca = indices[pa]
        cb = indices[pb]
        if ca == cb:
            s += np.float64(data[pa]) * np.float64(data[pb])
            pa += 1
            pb += 1
        elif ca < cb:
            pa += 1
        else:
            pb += 1
    den = norms[a] * norms[b]
    if den <= 0.0:
        return 0.0
    return s / den


@njit(cache=True, nogil=True)
def verify_band_runs(order, keys, n_train, indptr, indices, data, norms, threshold,
                     max_group, window):
    """Verified (test, train, cosine) pairs of one band.

    ``order`` sorts the band's ``keys`` (band bits in the high 16 bits, other signature
    bits below, so similar rows sit close together within a run); items ``< n_train`` are
    training rows, the others test rows (item - n_train). In a run of equal band bits of
    at most ``max_group`` items every (test, train) pair is verified; in a larger run each
    test item is verified against the training items within ``window`` positions of it.
    Returns the pairs whose exact cosine is at least ``threshold`` and the number of
    cosines computed.
    """
    n = order.shape[0]
    cap = 1024
    out_t = np.empty(cap, dtype=np.int64)
    out_r = np.empty(cap, dtype=np.int64)
    out_c = np.empty(cap, dtype=np.float64)
    m = 0
    work = 0
    start = 0
    band_mask = np.uint64(0xFFFF) << np.uint64(48)
    while start < n:
        stop = start + 1
        kb = keys[order[start]] & band_mask
        while stop < n and (keys[order[stop]] & band_mask) == kb:
            stop += 1
        size = stop - start
        if size > 1:
            big = size > max_group
            for t in range(start, stop):
                a = order[t]
                if a < n_train:
                    continue
                lo = start
                hi = stop
                if big:
                    lo = max(start, t - window)
                    hi = min(stop, t + window + 1)
                for u in range(lo, hi):
                    b = order[u]
                    if b >= n_train:
                        continue
                    work += 1
                    c = _cosine(a, b, indptr, indices, data, norms)
                    if c >= threshold:
                        if m == cap:
                            cap *= 2
                            nt = np.empty(cap, dtype=np.int64)
                            nr = np.empty(cap, dtype=np.int64)
                            nc = np.empty(cap, dtype=np.float64)
                            nt[:m] = out_t[:m]
                            nr[:m] = out_r[:m]
                            nc[:m] = out_c[:m]
                            out_t, out_r, out_c = nt, nr, nc
                        out_t[m] = a - n_train
                        out_r[m] = b
                        out_c[m] = c
                        m += 1
        start = stop
    return out_t[:m], out_r[:m], out_c[:m], work


def warmup():
    """Compile the kernels on tiny inputs."""
    indptr = np.array([0, 2, 4], dtype=np.int64)
    indices = np.array([0, 1, 0, 1], dtype=np.int32)
    data = np.ones(4, dtype=np.float32)
    bits = data.view(np.uint32)
    h = row_hashes(indptr, indices, bits, True, 0)
    order = np.argsort(h, kind="stable")
    group_equal_rows(order, h, indptr, indices, bits, True, indptr, indices, True)
    sig = simhash_signatures(indptr, indices, data, 1, 0)
    norms = np.ones(2)
    verify_band_runs(np.arange(2), sig[:, 0], 1, indptr, indices, data, norms, 0.9, 8, 2)
