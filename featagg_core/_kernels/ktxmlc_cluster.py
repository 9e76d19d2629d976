"""numba kernels that partition label vectors for :mod:`featagg_core.xmlc.ktxmlc`'s label trees.

* :func:`bisect_rows` — balanced recursive spherical 2-means into g groups (Parabel's node
  split applied recursively: PECOS's hierarchical k-means builds its K-way levels this way);
* :func:`cluster_rows` — K-way spherical k-means with k-means|| seeding (the KTXMLC paper's
  partition), optionally capacity-balanced.

Memory is proportional to the non-zeros of the rows being clustered: centroids are kept
sparse (feature-major lists of (cluster, value), at most one entry per member non-zero),
never as a dense K x d array, and k-means||'s candidate similarities are computed one
chosen centre at a time instead of as a candidates x candidates matrix. Only the
capacity-balanced K-way assignment (K > 2) keeps an m x K similarity table (float32).

Randomness comes from the per-call seed (the MINSTD / Park-Miller generator of
:mod:`featagg_core._kernels._common`), so results never depend on the calling thread.
"""
import math

import numpy as np
from numba import njit

from featagg_core._kernels._common import minstd_seed as seed_state
from featagg_core._kernels._common import minstd_uniform as _uniform
from featagg_core._kernels._common import scatter_add_row
from featagg_core._kernels.ktxmlc import _local_csr
from featagg_core._kernels.stopflag import stop_requested


# --------------------------------------------------------------------------- 2-means
@njit(cache=True)
def _two_means_balanced(lp, li, ld, dl, n_first, seed, max_iter, tol, stop):
    """Balanced spherical 2-means of the (unit) rows of a local csr, as Parabel/omikuji:
    two distinct random rows as centroids; each pass sorts rows by s1 - s0 and gives the
    first ``n_first`` (Parabel: floor(m/2)) to cluster 0, the rest to cluster 1;
    centroids = normalised sums; stop when the mean similarity improves by less than
    ``tol`` or after ``max_iter`` passes (or once ``stop[0]`` is set)."""
    m = lp.shape[0] - 1
    assign = np.zeros(m, np.int64)
    if m < 2:
        return assign
    state = seed_state(seed)
    state, u = _uniform(state)
    i0 = min(int(u * m), m - 1)
    state, u = _uniform(state)
    i1 = min(int(u * (m - 1)), m - 2)
    if i1 >= i0:
        i1 += 1
    c = np.zeros((2, max(dl, 1)), np.float64)
    for p in range(lp[i0], lp[i0 + 1]):
        c[0, li[p]] = ld[p]
    for p in range(lp[i1], lp[i1 + 1]):
        c[1, li[p]] = ld[p]
    diff = np.empty(m, np.float64)
    s0 = np.empty(m, np.float64)
    s1 = np.empty(m, np.float64)
    prev = -np.inf
    for it in range(max(1, max_iter)):
        if it > 0 and stop_requested(stop):
            break
        for i in range(m):
            a = 0.0
            b = 0.0
            for p in range(lp[i], lp[i + 1]):
                a += ld[p] * c[0, li[p]]
                b += ld[p] * c[1, li[p]]
            s0[i] = a
            s1[i] = b
            diff[i] = b - a
        order = np.argsort(diff, kind="mergesort")
        avg = 0.0
        for r in range(m):
            i = order[r]
            if r < n_first:
                assign[i] = 0
                avg += s0[i]
            else:
                assign[i] = 1
                avg += s1[i]
        avg /= m
        c[:, :] = 0.0
        for i in range(m):
            k = assign[i]
            for p in range(lp[i], lp[i + 1]):
                c[k, li[p]] += ld[p]
        for k in range(2):
            nrm = 0.0
            for f in range(dl):
                nrm += c[k, f] * c[k, f]
            if nrm > 0.0:
                nrm = 1.0 / math.sqrt(nrm)
                for f in range(dl):
                    c[k, f] *= nrm
        if avg - prev < tol:
            break
        prev = avg
    return assign


@njit(cache=True, nogil=True)
def bisect_rows(Rp, Ri, Rd, n_features, n_groups, seed, max_iter, tol, stop):
    """Split the (L2-normalised) rows of a csr matrix into ``n_groups`` balanced groups by
    recursive balanced spherical 2-means: a part meant to become g groups is split into
    parts of ceil(g/2) and floor(g/2) groups with sizes in that proportion, so final
    group sizes differ by at most a few rows. For a power of two this is PECOS's
    hierarchical k-means (Parabel's split applied log2(g) times); groups are numbered in
    order, so the two halves of every split hold consecutive group ids. ``stop``
    (one-element uint8) is polled per 2-means pass: once set, the call returns quickly
    with a partition the caller must discard.
    Returns (assign, n_groups) (fewer groups only if there are fewer rows)."""
    m = Rp.shape[0] - 1
    n_groups = max(1, min(n_groups, m))
    order = np.arange(m)
    # explicit stack of (lo, hi, groups, first group id, split counter)
    st_lo = np.empty(2 * n_groups + 2, np.int64)
    st_hi = np.empty(2 * n_groups + 2, np.int64)
    st_g = np.empty(2 * n_groups + 2, np.int64)
    st_id = np.empty(2 * n_groups + 2, np.int64)
    assign = np.zeros(m, np.int64)
    top = 0
    st_lo[0] = 0
    st_hi[0] = m
    st_g[0] = n_groups
    st_id[0] = 0
    top = 1
    n_split = 0
    while top > 0:
        if stop_requested(stop):
            break  # the caller discards the partition
        top -= 1
        lo = st_lo[top]
        hi = st_hi[top]
        g = st_g[top]
        gid = st_id[top]
        if g <= 1 or hi - lo < 2:
            for r in range(lo, hi):
                assign[order[r]] = gid
            continue
        g1 = (g + 1) // 2
        size = hi - lo
        n_first = (size * g1 + g // 2) // g
        n_first = max(1, min(size - 1, n_first))
        rows = order[lo:hi].copy()
        lp, li, ld, feats = _local_csr(Rp, Ri, Rd, rows, n_features)
        a = _two_means_balanced(lp, li, ld, feats.shape[0], n_first,
                                seed * 1000003 + n_split, max_iter, tol, stop)
        n_split += 1
        t = lo
        for r in range(rows.shape[0]):
            if a[r] == 0:
                order[t] = rows[r]
                t += 1
        mid = t
        for r in range(rows.shape[0]):
            if a[r] == 1:
                order[t] = rows[r]
                t += 1
        # push the second half first so the first half is split (and numbered) first
        st_lo[top] = mid
        st_hi[top] = hi
        st_g[top] = g - g1
        st_id[top] = gid + g1
        top += 1
        st_lo[top] = lo
        st_hi[top] = mid
        st_g[top] = g1
        st_id[top] = gid
        top += 1
    return assign, n_groups


# --------------------------------------------------------------------------- K-way k-means
@njit(cache=True)
def _scatter(lp, li, ld, i, dense, value):
    for p in range(lp[i], lp[i + 1]):
        dense[li[p]] = ld[p] * value


@njit(cache=True)
def _sims_to_rows(lp, li, ld, dense, out):
    m = lp.shape[0] - 1
    for i in range(m):
        s = 0.0
        for p in range(lp[i], lp[i + 1]):
            s += ld[p] * dense[li[p]]
        out[i] = s


@njit(cache=True)
def _sparse_centroids(lp, li, ld, dl, assign, K, acc, mark):
    """Normalised cluster sums, feature-major: local feature f holds entries
    ``cptr[f]:cptr[f+1]`` of (``ck`` cluster, ``cv`` value). ``acc`` (dl floats) and
    ``mark`` (dl bools) are zeroed scratch, returned zeroed. Also returns cluster sizes."""
    m = lp.shape[0] - 1
    size = np.zeros(K, np.int64)
    for i in range(m):
        size[assign[i]] += 1
    start = np.zeros(K + 1, np.int64)
    for k in range(K):
        start[k + 1] = start[k] + size[k]
    members = np.empty(m, np.int64)
    fill = start[:K].copy()
    for i in range(m):
        k = assign[i]
        members[fill[k]] = i
        fill[k] += 1
    ent_k = np.empty(lp[m], np.int64)
    ent_f = np.empty(lp[m], np.int64)
    ent_v = np.empty(lp[m], np.float64)
    touched = np.empty(dl, np.int64)
    ne = 0
    for k in range(K):
        nt = 0
        for r in range(start[k], start[k + 1]):
            i = members[r]
            nt = scatter_add_row(acc, mark, touched, nt, 1.0, lp[i], lp[i + 1], li, ld)
        nrm = 0.0
        for t in range(nt):
            nrm += acc[touched[t]] * acc[touched[t]]
        inv = 1.0 / math.sqrt(nrm) if nrm > 0.0 else 0.0
        for t in range(nt):
            f = touched[t]
            ent_k[ne] = k
            ent_f[ne] = f
            ent_v[ne] = acc[f] * inv
            ne += 1
            acc[f] = 0.0
            mark[f] = False
    cptr = np.zeros(dl + 1, np.int64)
    for e in range(ne):
        cptr[ent_f[e] + 1] += 1
    for f in range(dl):
        cptr[f + 1] += cptr[f]
    ck = np.empty(ne, np.int64)
    cv = np.empty(ne, np.float64)
    pos = cptr[:dl].copy()
    for e in range(ne):
        f = ent_f[e]
        ck[pos[f]] = ent_k[e]
        cv[pos[f]] = ent_v[e]
        pos[f] += 1
    return cptr, ck, cv, size


@njit(cache=True)
def _row_sims(lp, li, ld, i, cptr, ck, cv, out):
    """out[k] = similarity of row i to centroid k (out: K zeroed floats on entry)."""
    for p in range(lp[i], lp[i + 1]):
        f = li[p]
        x = ld[p]
        for e in range(cptr[f], cptr[f + 1]):
            out[ck[e]] += x * cv[e]


@njit(cache=True)
def _balanced_assign(sims, K):
    """Capacity-constrained assignment (sizes differ by at most one): points in order of
    their margin (best minus second-best similarity) go to their best cluster that still
    has room (capacity ceil(m/K))."""
    m = sims.shape[0]
    assign = np.empty(m, np.int64)
    margin = np.empty(m, np.float64)
    for i in range(m):
        b1 = -np.inf
        b2 = -np.inf
        for k in range(K):
            s = sims[i, k]
            if s > b1:
                b2 = b1
                b1 = s
            elif s > b2:
                b2 = s
        margin[i] = b2 - b1
    order = np.argsort(margin, kind="mergesort")
    cap = (m + K - 1) // K
    size = np.zeros(K, np.int64)
    for r in range(m):
        i = order[r]
        best = -1
        bs = -np.inf
        for k in range(K):
            if size[k] < cap and sims[i, k] > bs:
                bs = sims[i, k]
                best = k
        assign[i] = best
        size[best] += 1
    return assign


@njit(cache=True)
def _kmeans_parallel_seeds(lp, li, ld, dl, K, state, oversampling, rounds):
    """k-means|| (Bahmani et al. 2012): one uniform centre, then ``rounds`` rounds (<= 0:
    min(5, ceil(log psi))) sampling every point independently with probability
    ``oversampling * K * d^2(x) / phi``; the candidates, weighted by the points closest to
    them, are reduced to K centres by weighted k-means++ (similarities to each new centre
    computed on the fly: O(candidates) memory). Returns (centre rows, state)."""
    m = lp.shape[0] - 1
    dense = np.zeros(max(dl, 1), np.float64)
    cand = np.empty(m, np.int64)
    is_cand = np.zeros(m, np.bool_)
    state, u = _uniform(state)
    first = min(int(u * m), m - 1)
    cand[0] = first
    is_cand[first] = True
    nc = 1
    best = np.empty(m, np.float64)
    s = np.empty(m, np.float64)
    _scatter(lp, li, ld, first, dense, 1.0)
    _sims_to_rows(lp, li, ld, dense, best)
    _scatter(lp, li, ld, first, dense, 0.0)
    near = np.zeros(m, np.int64)
    d2 = np.empty(m, np.float64)
    psi = 0.0
    for i in range(m):
        d2[i] = max(0.0, 2.0 - 2.0 * best[i])
        psi += d2[i]
    n_rounds = rounds
    if n_rounds <= 0:
        n_rounds = 1
        if psi > 1.0:
            n_rounds = min(5, max(1, int(math.ceil(math.log(psi)))))
    ell = oversampling * K
    for _ in range(n_rounds):
        phi = 0.0
        for i in range(m):
            phi += d2[i]
        if phi <= 0.0:
            break
        start = nc
        for i in range(m):
            state, u = _uniform(state)
            if not is_cand[i] and u < ell * d2[i] / phi:
                cand[nc] = i
                is_cand[i] = True
                nc += 1
        for c in range(start, nc):
            _scatter(lp, li, ld, cand[c], dense, 1.0)
            _sims_to_rows(lp, li, ld, dense, s)
            _scatter(lp, li, ld, cand[c], dense, 0.0)
            for i in range(m):
                if s[i] > best[i]:
                    best[i] = s[i]
                    near[i] = c
                    d2[i] = max(0.0, 2.0 - 2.0 * s[i])
    wc = np.zeros(nc, np.float64)
    for i in range(m):
        wc[near[i]] += 1.0
    centers = np.empty(K, np.int64)
    if nc <= K:
        for c in range(nc):
            centers[c] = cand[c]
        k_have = nc
        # too few candidates: fill with the farthest remaining points (deterministic)
        order = np.argsort(best, kind="mergesort")
        r = 0
        while k_have < K and r < m:
            i = order[r]
            if not is_cand[i]:
                centers[k_have] = i
                is_cand[i] = True
                k_have += 1
            r += 1
        return centers, state
    # weighted k-means++ over the candidates (a local csr of the candidate rows)
    cp, ci, cd, _ = _local_csr(lp, li, ld, cand[:nc].copy(), dl)
    chosen_mark = np.zeros(nc, np.bool_)
    cs = np.empty(nc, np.float64)
    tot = 0.0
    for c in range(nc):
        tot += wc[c]
    state, u = _uniform(state)
    target = u * tot
    acc = 0.0
    pick = nc - 1
    for c in range(nc):
        acc += wc[c]
        if acc > target:
            pick = c
            break
    cd2 = np.full(nc, np.inf)
    for kk in range(K):
        if kk > 0:
            tot = 0.0
            for c in range(nc):
                tot += wc[c] * cd2[c]
            pick = -1
            if tot > 0.0:
                state, u = _uniform(state)
                target = u * tot
                acc = 0.0
                for c in range(nc):
                    acc += wc[c] * cd2[c]
                    if acc > target and wc[c] * cd2[c] > 0.0:
                        pick = c
                        break
                if pick < 0:
                    for c in range(nc - 1, -1, -1):
                        if wc[c] * cd2[c] > 0.0:
                            pick = c
                            break
            if pick < 0:
                # all remaining candidates coincide with a centre: take unused ones in order
                for c in range(nc):
                    if not chosen_mark[c]:
                        pick = c
                        break
        chosen_mark[pick] = True
        centers[kk] = cand[pick]
        _scatter(cp, ci, cd, pick, dense, 1.0)
        _sims_to_rows(cp, ci, cd, dense, cs)
        _scatter(cp, ci, cd, pick, dense, 0.0)
        for c in range(nc):
            v = max(0.0, 2.0 - 2.0 * cs[c])
            if v < cd2[c]:
                cd2[c] = v
    return centers, state


@njit(cache=True, nogil=True)
def cluster_rows(Rp, Ri, Rd, n_features, K, balanced, seed, oversampling, rounds,
                 max_iter, tol, min_size, stop):
    """Partition the (L2-normalised) rows of a csr matrix into at most K clusters.

    k-means|| seeding (:func:`_kmeans_parallel_seeds`), then spherical k-means (cosine
    assignment, centroid = normalised sum), optionally balanced, until the mean
    similarity improves by less than ``tol`` or ``max_iter`` passes. An emptied cluster
    is re-seeded with the point least similar to its own centroid. Clusters with fewer
    than ``min_size`` members are then dissolved into their members' next-best clusters.
    With K >= m every row is its own cluster; if everything collapses into one cluster the
    rows are split into two halves in the order given. Balanced K = 2 is
    :func:`_two_means_balanced`'s rule.

    ``stop`` (one-element uint8) is polled per k-means pass.

    Returns (assign, n_clusters): cluster ids 0..n_clusters-1.
    """
    m = Rp.shape[0] - 1
    if K >= m:
        return np.arange(m), m
    rows = np.arange(m)
    lp, li, ld, feats = _local_csr(Rp, Ri, Rd, rows, n_features)
    dl = feats.shape[0]
    state = seed_state(seed)
    centers, state = _kmeans_parallel_seeds(lp, li, ld, dl, K, state, oversampling, rounds)
    # initial assignment: each point to its most similar centre
    acc = np.zeros(max(dl, 1), np.float64)
    mark = np.zeros(max(dl, 1), np.bool_)
    # centroids = the centre rows themselves: cluster k holds only its centre
    only = np.empty(K, np.int64)
    for k in range(K):
        only[k] = centers[k]
    sub_p, sub_i, sub_d, _ = _local_csr(lp, li, ld, only, dl)
    cptr, ck, cv, _ = _sparse_centroids(sub_p, sub_i, sub_d, dl, np.arange(K), K, acc, mark)
    own = np.empty(m, np.float64)
    row_s = np.zeros(K, np.float64)
    sims = np.zeros((m, K) if (balanced and K > 2) else (0, K), np.float32)
    assign = np.zeros(m, np.int64)
    prev = -np.inf
    for it in range(max(1, max_iter)):
        if it > 0 and stop_requested(stop):
            break
        avg = 0.0
        if balanced and K == 2:
            diff = np.empty(m, np.float64)
            s0 = np.empty(m, np.float64)
            s1 = np.empty(m, np.float64)
            for i in range(m):
                row_s[:] = 0.0
                _row_sims(lp, li, ld, i, cptr, ck, cv, row_s)
                s0[i] = row_s[0]
                s1[i] = row_s[1]
                diff[i] = row_s[1] - row_s[0]
            order = np.argsort(diff, kind="mergesort")
            half = m // 2
            for r in range(m):
                i = order[r]
                assign[i] = 0 if r < half else 1
                own[i] = s0[i] if r < half else s1[i]
        else:
            for i in range(m):
                row_s[:] = 0.0
                _row_sims(lp, li, ld, i, cptr, ck, cv, row_s)
                if balanced:
                    for k in range(K):
                        sims[i, k] = row_s[k]
                else:
                    b = 0
                    bs = row_s[0]
                    for k in range(1, K):
                        if row_s[k] > bs:
                            bs = row_s[k]
                            b = k
                    assign[i] = b
                    own[i] = bs
            if balanced:
                assign = _balanced_assign(sims, K)
                for i in range(m):
                    own[i] = sims[i, assign[i]]
        for i in range(m):
            avg += own[i]
        avg /= m
        # an empty cluster is re-seeded with the point least similar to its own centroid
        size = np.zeros(K, np.int64)
        for i in range(m):
            size[assign[i]] += 1
        reseeded = False
        for k in range(K):
            if size[k] == 0:
                worst = -1
                ws = np.inf
                for i in range(m):
                    if size[assign[i]] > 1 and own[i] < ws:
                        ws = own[i]
                        worst = i
                if worst >= 0:
                    size[assign[worst]] -= 1
                    assign[worst] = k
                    size[k] = 1
                    own[worst] = 1.0
                    reseeded = True
        cptr, ck, cv, size = _sparse_centroids(lp, li, ld, dl, assign, K, acc, mark)
        if not reseeded and avg - prev < tol:
            break
        prev = -np.inf if reseeded else avg
    # ---- dissolve clusters smaller than min_size into the members' next-best cluster
    size = np.zeros(K, np.int64)
    for i in range(m):
        size[assign[i]] += 1
    alive = size > 0
    while True:
        n_alive = 0
        small = -1
        ss = m + 1
        for k in range(K):
            if alive[k]:
                n_alive += 1
                if size[k] < min_size and size[k] < ss:
                    ss = size[k]
                    small = k
        if small < 0 or n_alive <= 1:
            break
        alive[small] = False
        for i in range(m):
            if assign[i] == small:
                row_s[:] = 0.0
                _row_sims(lp, li, ld, i, cptr, ck, cv, row_s)
                b = -1
                bs = -np.inf
                for k in range(K):
                    if alive[k] and row_s[k] > bs:
                        bs = row_s[k]
                        b = k
                assign[i] = b
                size[b] += 1
        size[small] = 0
    # compact ids in cluster order
    newid = np.full(K, -1, np.int64)
    nk = 0
    for k in range(K):
        if size[k] > 0:
            newid[k] = nk
            nk += 1
    for i in range(m):
        assign[i] = newid[assign[i]]
    if nk == 1 and m >= 2:
        for i in range(m):
            assign[i] = 0 if i < m // 2 else 1
        nk = 2
    return assign, nk
