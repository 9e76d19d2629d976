"""numba kernels for :mod:`featagg_core.agglomeration.defrag` (DEFRAG balanced feature clustering).

All kernels take the csr parts (``indptr``, ``indices``, ``data``) of the feature
representation matrix ``R`` (one row per feature, L2-normalised) and plain arrays, and
return arrays. Nothing here densifies ``R``: every dense buffer is of the size of one
node's member list or of ``R``'s column count (per worker chunk, reset through the list
of touched columns so that the work per node is proportional to its non-zeros).

Determinism: the random choice of the two initial centres of a node depends only on
``(seed, node_id)`` (a splitmix64 hash), every sum runs over the node's members in a
fixed order, and nodes of one level never touch each other's data, so the result does
not depend on how the nodes are spread over threads.
"""
import numpy as np
from numba import njit, prange

from featagg_core._kernels import PARALLEL
from featagg_core._kernels._common import count_row_cols, scatter_add_row, splitmix64
from featagg_core._kernels.stopflag import stop_requested


@njit(cache=True)
def node_centres(seed, node_id, n):
    """The two distinct member positions (0 <= r0 != r1 < n) used as a node's first centres."""
    # splitmix64's output for a given state is a bijective 64-bit hash of that state
    h = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(node_id))[1])[1]
    r0 = np.int64(h % np.uint64(n))
    h2 = splitmix64(h)[1]
    r1 = np.int64(h2 % np.uint64(n - 1))
    if r1 >= r0:
        r1 += 1
    return r0, r1


@njit(cache=True, nogil=True)
def normalize_prune(indptr, indices, data, threshold):
    """L2-normalise every row, then drop entries with ``|v| <= threshold`` (no re-normalising,
    as in the original code's ``unit_normalize_columns`` + ``threshold``).

    Returns new ``(indptr, indices, data)`` (float32 data) and the squared norm of each
    returned row.
    """
    n = indptr.shape[0] - 1
    keep = np.zeros(n + 1, np.int64)
    scale = np.ones(n, np.float64)
    for r in range(n):
        s = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            s += np.float64(data[p]) * np.float64(data[p])
        if s > 0.0:
            scale[r] = 1.0 / np.sqrt(s)
        cnt = 0
        for p in range(indptr[r], indptr[r + 1]):
            v = np.float64(data[p]) * scale[r]
            if v != 0.0 and abs(v) > threshold:
                cnt += 1
        keep[r + 1] = keep[r] + cnt
    out_ind = np.empty(keep[n], np.int32)
    out_dat = np.empty(keep[n], np.float32)
    sq = np.zeros(n, np.float64)
    for r in range(n):
        q = keep[r]
        for p in range(indptr[r], indptr[r + 1]):
            v = np.float64(data[p]) * scale[r]
            if v != 0.0 and abs(v) > threshold:
                out_ind[q] = indices[p]
                out_dat[q] = np.float32(v)
                sq[r] += np.float64(np.float32(v)) ** 2
                q += 1
    return keep, out_ind, out_dat, sq


@njit(cache=True, nogil=True)
def split_node(indptr, indices, data, order, start, n, seed, node_id, eps, max_iter, loc,
               active, stop):
    """Balanced 2-means split of the node whose members are ``order[start:start+n]``.

    Follows ``balanced_kmeans`` of the DEFRAG/Parabel code: two distinct random members
    are the first centres; then repeatedly every member is scored by
    ``cos(r, c0) - cos(r, c1)``, the ``n // 2`` highest go left (side 0) and the rest right,
    each centre becomes the L2-normalised sum of its side, until the mean cosine of the
    members to their own centre grows by less than ``eps`` (or ``max_iter`` rounds).
    Ties in the score keep the members' order (stable sort).

    Like the original's ``shrink_mat``, the node's rows are first copied into a compact
    local matrix over the node's active columns only, so the centres are dense over those
    columns and every round is O(nnz of the node) with good locality.

    On return ``order[start:start+n//2]`` holds the left members and the rest the right
    ones, each in their previous relative order. ``loc`` (all -1) and ``active`` are
    scratch buffers of ``R``'s column count; ``loc`` is all -1 again on exit.
    ``stop`` (a one-element uint8 array) is read before every round: once another thread
    sets it to 1 the split ends after the current round (the caller discards the result).
    Returns the number of rounds run.
    """
    # compact copy of the node's rows over its active columns
    nnz = 0
    for i in range(n):
        f = order[start + i]
        nnz += indptr[f + 1] - indptr[f]
    lptr = np.empty(n + 1, np.int64)
    lind = np.empty(nnz, np.int32)
    ldat = np.empty(nnz, np.float64)
    na = 0
    q = 0
    lptr[0] = 0
    for i in range(n):
        f = order[start + i]
        for p in range(indptr[f], indptr[f + 1]):
            c = indices[p]
            if loc[c] < 0:
                loc[c] = na
                active[na] = c
                na += 1
            lind[q] = loc[c]
            ldat[q] = data[p]
            q += 1
        lptr[i + 1] = q
    for a in range(na):
        loc[active[a]] = -1

    # interleaved centres: cc[2 l] (centre 0) and cc[2 l + 1] (centre 1) on local column l
    cc = np.zeros(2 * max(na, 1), np.float64)
    r0, r1 = node_centres(seed, node_id, n)
    for p in range(lptr[r0], lptr[r0 + 1]):
        cc[2 * lind[p]] = ldat[p]
    for p in range(lptr[r1], lptr[r1 + 1]):
        cc[2 * lind[p] + 1] = ldat[p]

    cos0 = np.empty(n, np.float64)
    cos1 = np.empty(n, np.float64)
    score = np.empty(n, np.float64)
    side = np.zeros(n, np.int8)
    half = n // 2
    old_cos = -10000.0
    new_cos = -1.0
    it = 0
    while new_cos - old_cos >= eps and it < max_iter and not stop_requested(stop):
        it += 1
        for i in range(n):
            s0 = 0.0
            s1 = 0.0
            for p in range(lptr[i], lptr[i + 1]):
                v = ldat[p]
                l2 = 2 * lind[p]
                s0 += cc[l2] * v
                s1 += cc[l2 + 1] * v
            cos0[i] = s0
            cos1[i] = s1
            score[i] = s1 - s0  # ascending sort of (c1 - c0) == descending of (c0 - c1)
        # the n // 2 smallest (score, position) pairs go left: a stable sort's first half,
        # found by selection in O(n) instead of sorting
        vth = np.partition(score, half - 1)[half - 1]
        n_less = 0
        for i in range(n):
            if score[i] < vth:
                n_less += 1
        room = half - n_less  # ties at vth that still go left, lowest positions first
        old_cos = new_cos
        new_cos = 0.0
        for i in range(n):
            sc = score[i]
            if sc < vth or (sc == vth and room > 0):
                if sc == vth:
                    room -= 1
                side[i] = 0
                new_cos += cos0[i]
            else:
                side[i] = 1
                new_cos += cos1[i]
        new_cos /= n
        # new centres: normalised sums of the two sides
        cc[:] = 0.0
        for i in range(n):
            sd = side[i]
            for p in range(lptr[i], lptr[i + 1]):
                cc[2 * lind[p] + sd] += ldat[p]
        s0 = 0.0
        s1 = 0.0
        for a in range(na):
            s0 += cc[2 * a] * cc[2 * a]
            s1 += cc[2 * a + 1] * cc[2 * a + 1]
        s0 = 1.0 / np.sqrt(s0) if s0 > 0.0 else 0.0
        s1 = 1.0 / np.sqrt(s1) if s1 > 0.0 else 0.0
        for a in range(na):
            cc[2 * a] *= s0
            cc[2 * a + 1] *= s1

    # stable rewrite: left members first, then right ones
    members = order[start:start + n].copy()
    q = start
    for i in range(n):
        if side[i] == 0:
            order[q] = members[i]
            q += 1
    for i in range(n):
        if side[i] == 1:
            order[q] = members[i]
            q += 1
    return it


@njit(cache=True, nogil=True, parallel=PARALLEL)
def split_level(indptr, indices, data, n_cols, order, starts, sizes, node_ids, seed, eps,
                max_iter, n_chunks, stop):
    """Split every node of one tree level (nodes given by ``starts``/``sizes``/``node_ids``).

    The nodes are cut into ``n_chunks`` contiguous chunks run in parallel; each chunk owns
    its scratch buffers. Nodes own disjoint ranges of ``order``, so the result does not
    depend on ``n_chunks``. Returns the number of rounds of each node. ``stop[0] == 1``
    (set by another thread) ends every chunk before its next node and every node after
    its current round; ``order`` is then partly split and must be thrown away.
    """
    m = starts.shape[0]
    iters = np.zeros(m, np.int32)
    n_chunks = max(1, min(n_chunks, m))
    for ch in prange(n_chunks):
        lo = ch * m // n_chunks
        hi = (ch + 1) * m // n_chunks
        loc = np.full(max(n_cols, 1), -1, np.int64)
        active = np.empty(max(n_cols, 1), np.int64)
        for k in range(lo, hi):
            if stop_requested(stop):
                break
            iters[k] = split_node(indptr, indices, data, order, starts[k], sizes[k], seed,
                                  node_ids[k], eps, max_iter, loc, active, stop)
    return iters


@njit(cache=True, nogil=True, parallel=PARALLEL)
def cluster_sse(indptr, indices, data, n_cols, order, starts, sizes, n_chunks):
    """Per cluster: sum over members of ``||r_j - mean||^2`` (= sum ||r_j||^2 - ||sum||^2 / size).

    Clusters are the ranges ``order[starts[k]:starts[k]+sizes[k]]``; sparse accumulation
    over each cluster's touched columns only.
    """
    m = starts.shape[0]
    out = np.zeros(m, np.float64)
    n_chunks = max(1, min(n_chunks, m))
    for ch in prange(n_chunks):
        lo = ch * m // n_chunks
        hi = (ch + 1) * m // n_chunks
        acc = np.zeros(max(n_cols, 1), np.float64)
        mark = np.zeros(max(n_cols, 1), np.bool_)
        active = np.empty(max(n_cols, 1), np.int64)
        for k in range(lo, hi):
            na = 0
            sq = 0.0
            for i in range(sizes[k]):
                f = order[starts[k] + i]
                for p in range(indptr[f], indptr[f + 1]):
                    c = indices[p]
                    v = np.float64(data[p])
                    sq += v * v
                    acc[c] += v
                    if not mark[c]:
                        mark[c] = True
                        active[na] = c
                        na += 1
            s = 0.0
            for a in range(na):
                c = active[a]
                s += acc[c] * acc[c]
                acc[c] = 0.0
                mark[c] = False
            if sizes[k] > 0:
                out[k] = sq - s / sizes[k]
    return out


@njit(cache=True, nogil=True, parallel=PARALLEL)
def agglomerate(indptr, indices, data, labels, n_clusters, average, n_chunks):
    """``X @ G`` for the 0/1 membership matrix ``G`` (d x K) given by ``labels``, row by row.

    With ``average`` each output entry is divided by the number of the row's non-zero
    entries that fell into that cluster (the original code's ``avg`` option). Features with
    ``labels[j] < 0`` are dropped. Output rows have sorted cluster indices; an entry exists
    where at least one stored non-zero of the row falls into the cluster.
    """
    n = indptr.shape[0] - 1
    counts = np.zeros(n + 1, np.int64)
    n_chunks = max(1, min(n_chunks, max(n, 1)))
    K = max(n_clusters, 1)
    for ch in prange(n_chunks):
        lo = ch * n // n_chunks
        hi = (ch + 1) * n // n_chunks
        stamp = np.full(K, -1, np.int64)
        for r in range(lo, hi):
            cnt = 0
            for p in range(indptr[r], indptr[r + 1]):
                k = labels[indices[p]]
                if k >= 0 and data[p] != 0 and stamp[k] != r:
                    stamp[k] = r
                    cnt += 1
            counts[r + 1] = cnt
    out_ptr = np.cumsum(counts)
    out_ind = np.empty(out_ptr[n], np.int32)
    out_dat = np.empty(out_ptr[n], np.float32)
    for ch in prange(n_chunks):
        lo = ch * n // n_chunks
        hi = (ch + 1) * n // n_chunks
        acc = np.zeros(K, np.float64)
        num = np.zeros(K, np.int64)
        for r in range(lo, hi):
            q = out_ptr[r]
            for p in range(indptr[r], indptr[r + 1]):
                k = labels[indices[p]]
                if k >= 0 and data[p] != 0:
                    if num[k] == 0:
                        out_ind[q] = k
                        q += 1
                    num[k] += 1
                    acc[k] += data[p]
            seg = np.sort(out_ind[out_ptr[r]:q])
            for t in range(seg.shape[0]):
                k = seg[t]
                out_ind[out_ptr[r] + t] = k
                v = acc[k]
                if average:
                    v /= num[k]
                out_dat[out_ptr[r] + t] = np.float32(v)
                acc[k] = 0.0
                num[k] = 0
    return out_ptr, out_ind, out_dat


@njit(cache=True, nogil=True, parallel=PARALLEL)
def xt_y(xt_ptr, xt_ind, xt_dat, y_ptr, y_ind, y_dat, n_labels, n_chunks, stop):
    """Rows of ``Xᵀ Y`` (csr, sorted indices) from ``Xᵀ`` in csr (= X in csc) and ``Y`` in
    csr: row j sums the label rows of the points where feature j is non-zero, weighted
    by ``X[i, j]``. Two passes (count, fill), parallel over chunks of features, each with
    its own dense accumulator of ``n_labels`` entries.

    ``stop[0] == 1`` (set by another thread; read once per feature) ends the work early:
    after an interrupted count pass empty arrays are returned, after an interrupted fill
    pass the output is incomplete; either way the caller discards it."""
    d = xt_ptr.shape[0] - 1
    counts = np.zeros(d + 1, np.int64)
    n_chunks = max(1, min(n_chunks, max(d, 1)))
    L = max(n_labels, 1)
    for ch in prange(n_chunks):
        lo = ch * d // n_chunks
        hi = (ch + 1) * d // n_chunks
        stamp = np.full(L, -1, np.int64)
        for j in range(lo, hi):
            if stop_requested(stop):
                break
            counts[j + 1] = count_row_cols(j, xt_ptr, xt_ind, y_ptr, y_ind, stamp)
    if stop_requested(stop):
        return (np.zeros(d + 1, np.int64), np.empty(0, np.int32),
                np.empty(0, np.float32))
    out_ptr = np.cumsum(counts)
    out_ind = np.empty(out_ptr[d], np.int32)
    out_dat = np.empty(out_ptr[d], np.float32)
    for ch in prange(n_chunks):
        lo = ch * d // n_chunks
        hi = (ch + 1) * d // n_chunks
        acc = np.zeros(L, np.float64)
        seen = np.zeros(L, np.bool_)
        for j in range(lo, hi):
            if stop_requested(stop):
                break
            q0 = out_ptr[j]
            k = q0
            for p in range(xt_ptr[j], xt_ptr[j + 1]):
                i = xt_ind[p]
                k = scatter_add_row(acc, seen, out_ind, k, np.float64(xt_dat[p]),
                                    y_ptr[i], y_ptr[i + 1], y_ind, y_dat)
            seg = np.sort(out_ind[q0:k])
            for t in range(seg.shape[0]):
                lab = seg[t]
                out_ind[q0 + t] = lab
                out_dat[q0 + t] = np.float32(acc[lab])
                acc[lab] = 0.0
                seen[lab] = False
    return out_ptr, out_ind, out_dat


@njit(cache=True, nogil=True)
def xt_y_nnz(xt_ptr, xt_ind, y_ptr, y_ind, n_labels):
    """The number of non-zeros :func:`xt_y` would return (its count pass alone, serial):
    the distinct (feature, label) pairs over the rows. Used by the run-time estimate."""
    d = xt_ptr.shape[0] - 1
    stamp = np.full(max(n_labels, 1), -1, np.int64)
    total = 0
    for j in range(d):
        total += count_row_cols(j, xt_ptr, xt_ind, y_ptr, y_ind, stamp)
    return total
