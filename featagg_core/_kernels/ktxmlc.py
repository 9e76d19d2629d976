"""numba kernels of :mod:`featagg_core.ktxmlc`: node clustering (k-means|| seeding +
spherical k-means), training of a node's child classifiers, and beam-search prediction.

All kernels take arrays and return arrays. Randomness comes from the per-call seed
(Park-Miller generator of :mod:`featagg_core._kernels.linear`), so results never depend
on the thread that runs a kernel.
"""
import math

import numpy as np
from numba import njit, prange

from . import PARALLEL

from .linear import l2svc_dual_cd, next_state, seed_state

_MODULUS = 2147483647


@njit(cache=True)
def _uniform(state):
    state = next_state(state)
    return state, (state - 1) / (_MODULUS - 1.0)


@njit(cache=True)
def _local_csr(indptr, indices, data, rows, n_features):
    """Gather ``rows`` of a csr matrix and renumber its columns densely (sorted order).

    Returns (lp, li, ld, local_to_global)."""
    m = rows.shape[0]
    fmap = np.full(n_features, -1, np.int64)
    nnz = 0
    for r in range(m):
        i = rows[r]
        nnz += indptr[i + 1] - indptr[i]
    feats = np.empty(nnz, np.int64)
    nf = 0
    for r in range(m):
        i = rows[r]
        for p in range(indptr[i], indptr[i + 1]):
            f = indices[p]
            if fmap[f] < 0:
                fmap[f] = 0
                feats[nf] = f
                nf += 1
    feats = np.sort(feats[:nf])
    for j in range(nf):
        fmap[feats[j]] = j
    lp = np.empty(m + 1, np.int64)
    li = np.empty(nnz, np.uint32)  # unsigned: no negative-index wraparound test per access
    ld = np.empty(nnz, data.dtype)
    lp[0] = 0
    q = 0
    for r in range(m):
        i = rows[r]
        for p in range(indptr[i], indptr[i + 1]):
            li[q] = fmap[indices[p]]
            ld[q] = data[p]
            q += 1
        lp[r + 1] = q
    return lp, li, ld, feats


# --------------------------------------------------------------------------- training
@njit(cache=True, nogil=True)
def node_rows(Ycp, Yci, perm, lab_lo, lab_hi, n_rows):
    """Sorted training rows that have at least one label among ``perm[lab_lo:lab_hi]``."""
    mark = np.zeros(n_rows, np.bool_)
    for q in range(lab_lo, lab_hi):
        lab = perm[q]
        for p in range(Ycp[lab], Ycp[lab + 1]):
            mark[Yci[p]] = True
    return np.nonzero(mark)[0]


@njit(cache=True, nogil=True)
def train_children(Xp, Xi, Xd, n_features, Yp, Yi, pos, rows, child_lo, child_hi,
                   child_seed, C, eps, max_iter, threshold, bias):
    """Train the classifiers of consecutive children of one tree node.

    Child ``j`` owns tree-ordered label positions ``[child_lo[j], child_hi[j])`` (``pos``
    maps a label to its position); its positives are the ``rows`` having one of them.
    Every classifier is trained on exactly ``rows`` (the points reaching the parent).

    Returns (counts, feats, vals, bias_w, n_iter): weight entries of child ``j`` are the
    ``counts[j]`` next ones of ``feats``/``vals`` (global feature ids, ascending), pruned
    to ``|w| > threshold``; ``bias_w[j]`` is its (never pruned) bias weight.
    """
    nc = child_lo.shape[0]
    m = rows.shape[0]
    lp, li, ld, feats_g = _local_csr(Xp, Xi, Xd, rows, n_features)
    dl = feats_g.shape[0]
    ymat = np.full((nc, m), -1, np.int8)
    npos = np.zeros(nc, np.int64)
    lo0 = child_lo[0]
    hi1 = child_hi[nc - 1]
    for r in range(m):
        i = rows[r]
        for p in range(Yp[i], Yp[i + 1]):
            q = pos[Yi[p]]
            if q >= lo0 and q < hi1:
                j = np.searchsorted(child_lo, q, side="right") - 1
                if q < child_hi[j] and ymat[j, r] < 0:
                    ymat[j, r] = 1
                    npos[j] += 1
    cap = max(16, 4 * dl)
    out_f = np.empty(cap, np.int32)
    out_v = np.empty(cap, np.float32)
    counts = np.zeros(nc, np.int64)
    bias_w = np.zeros(nc, np.float32)
    iters = np.zeros(nc, np.int64)
    tot = 0
    for j in range(nc):
        if npos[j] == m:
            # every point is positive: like omikuji, train nothing; a margin of exactly 1
            # gives the node a log-score of 0 (probability 1).
            bias_w[j] = 1.0 / bias if bias != 0 else 0.0
            continue
        y = ymat[j].copy()
        w, it = l2svc_dual_cd(lp, li, ld, y, dl, C, eps, max_iter, bias, child_seed[j])
        iters[j] = it
        bias_w[j] = w[dl]
        if tot + dl > cap:
            cap = max(2 * cap, tot + dl)
            nf_ = np.empty(cap, np.int32)
            nv_ = np.empty(cap, np.float32)
            nf_[:tot] = out_f[:tot]
            nv_[:tot] = out_v[:tot]
            out_f = nf_
            out_v = nv_
        c = 0
        for f in range(dl):
            v = w[f]
            if abs(v) > threshold:
                out_f[tot] = feats_g[f]
                out_v[tot] = v
                tot += 1
                c += 1
        counts[j] = c
    return counts, out_f[:tot].copy(), out_v[:tot].copy(), bias_w, iters


# --------------------------------------------------------------------------- clustering
@njit(cache=True)
def _sims_to_rows(lp, li, ld, dense):
    m = lp.shape[0] - 1
    out = np.empty(m, np.float64)
    for i in range(m):
        s = 0.0
        for p in range(lp[i], lp[i + 1]):
            s += ld[p] * dense[li[p]]
        out[i] = s
    return out


@njit(cache=True)
def _scatter(lp, li, ld, i, dense, value):
    for p in range(lp[i], lp[i + 1]):
        dense[li[p]] = ld[p] * value


@njit(cache=True)
def _balanced_assign(sims, K):
    """Capacity-constrained assignment: sizes differ by at most one.

    K = 2 follows Parabel/omikuji exactly: points sorted by s0 - s1 (descending), the
    first floor(m/2) go to cluster 0. For K > 2, points are taken in order of their
    margin (best minus second-best similarity) and sent to their best cluster that still
    has room (capacity ceil(m/K))."""
    m = sims.shape[0]
    assign = np.empty(m, np.int64)
    if K == 2:
        diff = np.empty(m, np.float64)
        for i in range(m):
            diff[i] = sims[i, 1] - sims[i, 0]
        order = np.argsort(diff, kind="mergesort")
        half = m // 2
        for r in range(m):
            assign[order[r]] = 0 if r < half else 1
        return assign
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


@njit(cache=True, nogil=True)
def cluster_rows(Rp, Ri, Rd, n_features, K, balanced, seed, oversampling, rounds,
                 max_iter, tol, min_size):
    """Partition the (L2-normalised) rows of a csr matrix into at most K clusters.

    k-means|| seeding (Bahmani et al. 2012): one uniform centre, then ``rounds`` rounds
    (<= 0: min(5, ceil(log psi))) sampling every point independently with probability
    ``oversampling * K * d^2(x) / phi``; candidates weighted by the points closest to them
    are reduced to K centres by weighted k-means++. Then spherical k-means (cosine
    assignment, centroid = normalised sum), optionally balanced, until the mean
    similarity improves by less than ``tol`` or ``max_iter`` passes. Clusters with fewer
    than ``min_size`` members are dissolved into their members' next-best clusters. With
    K >= m every row is its own cluster; if everything collapses into one cluster the rows
    are split into two halves in the order given.

    Returns (assign, n_clusters, sims): cluster ids 0..n_clusters-1 and the m x K
    similarity matrix of the final centroids (for diagnostics).
    """
    m = Rp.shape[0] - 1
    if K >= m:
        return np.arange(m), m, np.zeros((m, 0), np.float64)
    rows = np.arange(m)
    lp, li, ld, feats = _local_csr(Rp, Ri, Rd, rows, n_features)
    dl = feats.shape[0]
    state = seed_state(seed)
    dense = np.zeros(max(dl, 1), np.float64)

    # ---- k-means|| seeding
    cand = np.empty(m, np.int64)
    is_cand = np.zeros(m, np.bool_)
    state, u = _uniform(state)
    first = min(int(u * m), m - 1)
    cand[0] = first
    is_cand[first] = True
    nc = 1
    _scatter(lp, li, ld, first, dense, 1.0)
    best = _sims_to_rows(lp, li, ld, dense)
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
            s = _sims_to_rows(lp, li, ld, dense)
            _scatter(lp, li, ld, cand[c], dense, 0.0)
            for i in range(m):
                if s[i] > best[i]:
                    best[i] = s[i]
                    near[i] = c
                    d2[i] = max(0.0, 2.0 - 2.0 * s[i])
    # weights of the candidates
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
    else:
        # weighted k-means++ over the candidates
        G = np.empty((nc, nc), np.float64)
        for c in range(nc):
            _scatter(lp, li, ld, cand[c], dense, 1.0)
            for c2 in range(nc):
                i2 = cand[c2]
                s = 0.0
                for p in range(lp[i2], lp[i2 + 1]):
                    s += ld[p] * dense[li[p]]
                G[c, c2] = s
            _scatter(lp, li, ld, cand[c], dense, 0.0)
        chosen = np.empty(K, np.int64)
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
        chosen[0] = pick
        cd2 = np.empty(nc, np.float64)
        for c in range(nc):
            cd2[c] = max(0.0, 2.0 - 2.0 * G[pick, c])
        for kk in range(1, K):
            tot = 0.0
            for c in range(nc):
                tot += wc[c] * cd2[c]
            if tot <= 0.0:
                # all remaining candidates coincide with a centre: take unused ones in order
                pick = -1
                for c in range(nc):
                    used = False
                    for t in range(kk):
                        if chosen[t] == c:
                            used = True
                    if not used:
                        pick = c
                        break
            else:
                state, u = _uniform(state)
                target = u * tot
                acc = 0.0
                pick = -1
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
            chosen[kk] = pick
            for c in range(nc):
                v = max(0.0, 2.0 - 2.0 * G[pick, c])
                if v < cd2[c]:
                    cd2[c] = v
        for kk in range(K):
            centers[kk] = cand[chosen[kk]]

    # ---- spherical k-means
    cent = np.zeros((K, max(dl, 1)), np.float64)
    for kk in range(K):
        i = centers[kk]
        for p in range(lp[i], lp[i + 1]):
            cent[kk, li[p]] = ld[p]
    sims = np.empty((m, K), np.float64)
    assign = np.zeros(m, np.int64)
    prev = -np.inf
    for it in range(max(1, max_iter)):
        for i in range(m):
            for kk in range(K):
                s = 0.0
                for p in range(lp[i], lp[i + 1]):
                    s += ld[p] * cent[kk, li[p]]
                sims[i, kk] = s
        if balanced:
            assign = _balanced_assign(sims, K)
        else:
            for i in range(m):
                b = 0
                bs = sims[i, 0]
                for kk in range(1, K):
                    if sims[i, kk] > bs:
                        bs = sims[i, kk]
                        b = kk
                assign[i] = b
        avg = 0.0
        for i in range(m):
            avg += sims[i, assign[i]]
        avg /= m
        # new centroids = normalised sums; an empty cluster is re-seeded with the point
        # least similar to its own centroid
        cent[:, :] = 0.0
        size = np.zeros(K, np.int64)
        for i in range(m):
            kk = assign[i]
            size[kk] += 1
            for p in range(lp[i], lp[i + 1]):
                cent[kk, li[p]] += ld[p]
        for kk in range(K):
            if size[kk] == 0:
                worst = 0
                ws = np.inf
                for i in range(m):
                    if size[assign[i]] > 1 and sims[i, assign[i]] < ws:
                        ws = sims[i, assign[i]]
                        worst = i
                for p in range(lp[worst], lp[worst + 1]):
                    cent[kk, li[p]] = ld[p]
                size[kk] = 1
                prev = -np.inf  # force another pass
                continue
            nrm = 0.0
            for f in range(dl):
                nrm += cent[kk, f] * cent[kk, f]
            if nrm > 0.0:
                nrm = 1.0 / math.sqrt(nrm)
                for f in range(dl):
                    cent[kk, f] *= nrm
        if avg - prev < tol:
            break
        prev = avg

    # ---- dissolve clusters smaller than min_size into the members' next-best cluster
    size = np.zeros(K, np.int64)
    for i in range(m):
        size[assign[i]] += 1
    alive = size > 0
    while True:
        n_alive = 0
        small = -1
        ss = m + 1
        for kk in range(K):
            if alive[kk]:
                n_alive += 1
                if size[kk] < min_size and size[kk] < ss:
                    ss = size[kk]
                    small = kk
        if small < 0 or n_alive <= 1:
            break
        alive[small] = False
        for i in range(m):
            if assign[i] == small:
                b = -1
                bs = -np.inf
                for kk in range(K):
                    if alive[kk] and sims[i, kk] > bs:
                        bs = sims[i, kk]
                        b = kk
                assign[i] = b
                size[b] += 1
        size[small] = 0
    # compact ids in cluster order
    newid = np.full(K, -1, np.int64)
    nk = 0
    for kk in range(K):
        if size[kk] > 0:
            newid[kk] = nk
            nk += 1
    for i in range(m):
        assign[i] = newid[assign[i]]
    if nk == 1 and m >= 2:
        for i in range(m):
            assign[i] = 0 if i < m // 2 else 1
        nk = 2
    return assign, nk, sims


# --------------------------------------------------------------------------- prediction
@njit(cache=True)
def build_feature_major(first_child, n_children, Wp, Wi, Wd):
    """Per parent node, its children's weights re-indexed feature-major.

    Node ``p``'s features are ``fm_feat[fm_ptr[p]:fm_ptr[p+1]]`` (ascending); feature
    slot ``s`` holds entries ``fm_eptr[s]:fm_eptr[s+1]`` of (child offset, value).
    Children of a node are consecutive rows of W (node-major csr)."""
    N = first_child.shape[0]
    total = Wp[N]
    fm_ptr = np.zeros(N + 1, np.int64)
    fm_feat = np.empty(total, np.int32)
    fm_eptr = np.zeros(total + 1, np.int64)
    fm_child = np.empty(total, np.uint32)
    fm_val = np.empty(total, np.float32)
    nf = 0
    ne = 0
    for p in range(N):
        fm_ptr[p] = nf
        nc = n_children[p]
        if nc == 0:
            continue
        fc = first_child[p]
        a = Wp[fc]
        b = Wp[fc + nc]
        cnt = b - a
        if cnt == 0:
            continue
        ch = np.empty(cnt, np.int32)
        for j in range(nc):
            for q in range(Wp[fc + j], Wp[fc + j + 1]):
                ch[q - a] = j
        order = np.argsort(Wi[a:b], kind="mergesort")
        prev = -1
        for o in order:
            f = Wi[a + o]
            if f != prev:
                fm_feat[nf] = f
                fm_eptr[nf] = ne
                nf += 1
                prev = f
            fm_child[ne] = ch[o]
            fm_val[ne] = Wd[a + o]
            ne += 1
    fm_ptr[N] = nf
    fm_eptr[nf] = ne
    return fm_ptr, fm_feat[:nf].copy(), fm_eptr[:nf + 1].copy(), fm_child, fm_val


@njit(cache=True)
def _child_logscores(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr,
                     fm_child, fm_val, bias_w, bias, out):
    """log-score -max(0, 1 - w_c^T x)^2 of every child c of node p, written to out[:nc]."""
    nc = n_children[p]
    fc = first_child[p]
    for j in range(nc):
        out[j] = bias_w[fc + j] * bias
    lo = fm_ptr[p]
    hi = fm_ptr[p + 1]
    for q in range(xi.shape[0]):
        if lo >= hi:
            break
        f = xi[q]
        # first slot >= f in fm_feat[lo:hi] (both sorted: lo only moves forward)
        a = lo
        b = hi
        while a < b:
            mid = (a + b) >> 1
            if fm_feat[mid] < f:
                a = mid + 1
            else:
                b = mid
        s = a
        if s < hi and fm_feat[s] == f:
            v = xv[q]
            for e in range(fm_eptr[s], fm_eptr[s + 1]):
                out[fm_child[e]] += fm_val[e] * v
            lo = s + 1
        else:
            lo = s
    for j in range(nc):
        mgn = 1.0 - out[j]
        out[j] = -(mgn * mgn) if mgn > 0.0 else 0.0


@njit(cache=True, nogil=True, parallel=PARALLEL)
def beam_predict(Xp, Xi, Xd, roots, first_child, n_children, node_label, leafc,
                 fm_ptr, fm_feat, fm_eptr, fm_child, fm_val, bias_w, bias,
                 n_labels, beam, k, max_children):
    """Beam search over every tree, scores averaged over trees, top-k per row.

    Follows omikuji/Parabel: a node's log-score is the sum over its path of
    -max(0, 1 - w^T x)^2; at each step every non-leaf node of the beam is expanded, leaf
    clusters are carried over, and the beam is cut to the ``beam`` best; finally every
    label of the surviving leaf clusters gets exp(path + own log-score). Labels missing
    from a tree's beam count 0 in the average. Ties go to the lower label index.

    Returns (idx, val): n x k arrays, idx = -1 where fewer than k labels were reached.
    """
    n = Xp.shape[0] - 1
    n_trees = roots.shape[0]
    out_idx = np.full((n, k), -1, np.int64)
    out_val = np.zeros((n, k), np.float32)
    chunk = 32
    n_chunks = (n + chunk - 1) // chunk
    for c in prange(n_chunks):
        acc = np.zeros(n_labels, np.float64)
        seen = np.zeros(n_labels, np.bool_)
        touched = np.empty(n_labels, np.int64)
        scores = np.empty(max(max_children, 1), np.float64)
        best_v = np.empty(k, np.float64)
        best_l = np.empty(k, np.int64)
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            xi = Xi[Xp[i]:Xp[i + 1]]
            xv = Xd[Xp[i]:Xp[i + 1]]
            nt = 0
            for t in range(n_trees):
                cur_n = np.empty(1, np.int64)
                cur_s = np.zeros(1, np.float64)
                cur_n[0] = roots[t]
                while True:
                    ncur = cur_n.shape[0]
                    any_branch = False
                    size = 0
                    for b in range(ncur):
                        if leafc[cur_n[b]]:
                            size += 1
                        else:
                            any_branch = True
                            size += n_children[cur_n[b]]
                    if not any_branch:
                        break
                    nxt_n = np.empty(size, np.int64)
                    nxt_s = np.empty(size, np.float64)
                    q = 0
                    for b in range(ncur):
                        p = cur_n[b]
                        if leafc[p]:
                            nxt_n[q] = p
                            nxt_s[q] = cur_s[b]
                            q += 1
                        else:
                            _child_logscores(p, xi, xv, first_child, n_children, fm_ptr,
                                             fm_feat, fm_eptr, fm_child, fm_val, bias_w,
                                             bias, scores)
                            fc = first_child[p]
                            for j in range(n_children[p]):
                                nxt_n[q] = fc + j
                                nxt_s[q] = cur_s[b] + scores[j]
                                q += 1
                    if size > beam:
                        order = np.argsort(-nxt_s, kind="mergesort")[:beam]
                        cur_n = nxt_n[order]
                        cur_s = nxt_s[order]
                    else:
                        cur_n = nxt_n
                        cur_s = nxt_s
                for b in range(cur_n.shape[0]):
                    p = cur_n[b]
                    _child_logscores(p, xi, xv, first_child, n_children, fm_ptr, fm_feat,
                                     fm_eptr, fm_child, fm_val, bias_w, bias, scores)
                    fc = first_child[p]
                    for j in range(n_children[p]):
                        lab = node_label[fc + j]
                        if not seen[lab]:
                            seen[lab] = True
                            touched[nt] = lab
                            nt += 1
                        acc[lab] += math.exp(cur_s[b] + scores[j])
            # top-k by (score desc, label asc): insertion into a k-slot buffer, O(nt k)
            cnt = 0
            for r in range(nt):
                lab = touched[r]
                v = acc[lab]
                if cnt == k:
                    lv = best_v[k - 1]
                    if v < lv or (v == lv and lab > best_l[k - 1]):
                        continue
                    pos = k - 1
                else:
                    pos = cnt
                    cnt += 1
                while pos > 0 and (best_v[pos - 1] < v or
                                   (best_v[pos - 1] == v and best_l[pos - 1] > lab)):
                    best_v[pos] = best_v[pos - 1]
                    best_l[pos] = best_l[pos - 1]
                    pos -= 1
                best_v[pos] = v
                best_l[pos] = lab
            for r in range(cnt):
                out_idx[i, r] = best_l[r]
                out_val[i, r] = best_v[r] / n_trees
            for r in range(nt):
                acc[touched[r]] = 0.0
                seen[touched[r]] = False
    return out_idx, out_val
