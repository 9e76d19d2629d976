"""numba kernels of :mod:`featagg_core.xmlc.ktxmlc`: training of a node's child classifiers
(with the calibration histogram of their decision values) and beam-search
prediction. The label-tree partitioning kernels are in
:mod:`featagg_core._kernels.ktxmlc_cluster`.

All kernels take arrays and return arrays; scratch is proportional to the rows and
non-zeros a call works on (never to the number of training rows or features of the whole
problem). Randomness comes from per-call seeds, so results never depend on the thread that
runs a kernel.
"""
import math

import numpy as np
from numba import njit, prange

from featagg_core._kernels import PARALLEL
from featagg_core._kernels._common import lower_bound
from featagg_core._kernels.linear import l2svc_dual_cd_block_warm, lr_dual_cd
from featagg_core._kernels.stopflag import stop_requested


@njit(cache=True)
def _local_csr(indptr, indices, data, rows, n_features):
    """Gather ``rows`` of a csr matrix and renumber its columns densely (sorted order).

    Scratch is proportional to the gathered non-zeros, not to the matrix: the column map
    is a dense array of ``n_features`` only when the rows hold at least ``n_features / 8``
    non-zeros (then it costs less than sorting), otherwise the columns are found by sorting
    and ``searchsorted``. With the dense map the columns present are collected in scratch
    of at most ``n_features`` entries, and the search for them stops at the row by which
    every column has been seen (dense rows: the first one) instead of reading every row
    twice. Returns (lp, li, ld, local_to_global)."""
    m = rows.shape[0]
    nnz = 0
    for r in range(m):
        i = rows[r]
        nnz += indptr[i + 1] - indptr[i]
    lp = np.empty(m + 1, np.int64)
    li = np.empty(nnz, np.uint32)  # unsigned: no negative-index wraparound test per access
    ld = np.empty(nnz, data.dtype)
    lp[0] = 0
    if 8 * nnz >= n_features:
        fmap = np.full(n_features, -1, np.int64)
        feats = np.empty(min(nnz, n_features), np.int64)
        nf = 0
        for r in range(m):
            if nf == n_features:
                break                  # every column seen: the other rows add none
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
        q = 0
        for r in range(m):
            i = rows[r]
            for p in range(indptr[i], indptr[i + 1]):
                li[q] = fmap[indices[p]]
                ld[q] = data[p]
                q += 1
            lp[r + 1] = q
        return lp, li, ld, feats
    allf = np.empty(nnz, np.int64)
    q = 0
    for r in range(m):
        i = rows[r]
        for p in range(indptr[i], indptr[i + 1]):
            allf[q] = indices[p]
            q += 1
    feats = np.unique(allf)
    q = 0
    for r in range(m):
        i = rows[r]
        for p in range(indptr[i], indptr[i + 1]):
            li[q] = np.searchsorted(feats, indices[p])
            ld[q] = data[p]
            q += 1
        lp[r + 1] = q
    return lp, li, ld, feats


# --------------------------------------------------------------------------- training
@njit(cache=True, nogil=True)
def node_rows(Ycp, Yci, perm, lab_lo, lab_hi):
    """Sorted training rows that have at least one label among ``perm[lab_lo:lab_hi]``.

    ``Ycp``/``Yci``: the label matrix in csc form (rows of every label, sorted). Cost and
    scratch are proportional to those labels' positives (no mask over all rows)."""
    tot = 0
    for q in range(lab_lo, lab_hi):
        lab = perm[q]
        tot += Ycp[lab + 1] - Ycp[lab]
    allr = np.empty(tot, np.int64)
    t = 0
    for q in range(lab_lo, lab_hi):
        lab = perm[q]
        for p in range(Ycp[lab], Ycp[lab + 1]):
            allr[t] = Yci[p]
            t += 1
    if lab_hi - lab_lo == 1:
        return allr  # one label: already sorted and distinct
    return np.unique(allr)


@njit(cache=True)
def calibration_bin(z, n_bins, z_max):
    """Histogram bin of a decision value ``z`` on ``n_bins`` equal bins over [-z_max, z_max]
    (values outside fall in the end bins)."""
    b = int(math.floor((z + z_max) * n_bins / (2.0 * z_max)))
    if b < 0:
        return 0
    if b >= n_bins:
        return n_bins - 1
    return b


@njit(cache=True, nogil=True)
def train_children(Xp, Xi, Xd, n_features, Yp, Yi, pos, rows, child_lo, child_hi,
                   child_seed, node_seed, C, eps, max_iter, threshold, bias, n_bins, z_max,
                   calib_rows, loss, stop):
    """:func:`train_children_warm` from zero duals, keeping none: returns its first six
    arrays (counts, feats, vals, bias_w, n_iter, hist)."""
    e64 = np.zeros(0, np.int64)
    out = train_children_warm(Xp, Xi, Xd, n_features, Yp, Yi, pos, rows, child_lo,
                              child_hi, child_seed, node_seed, C, eps, max_iter, threshold,
                              bias, n_bins, z_max, calib_rows, loss, stop, e64,
                              np.zeros(0, np.int32), np.zeros(0, Xd.dtype), False)
    return out[0], out[1], out[2], out[3], out[4], out[5]


@njit(cache=True, nogil=True)
def train_children_warm(Xp, Xi, Xd, n_features, Yp, Yi, pos, rows, child_lo, child_hi,
                        child_seed, node_seed, C, eps, max_iter, threshold, bias, n_bins,
                        z_max, calib_rows, loss, stop, warm_cnt, warm_pos, warm_val,
                        keep_duals):
    """Train the classifiers of consecutive children of one tree node.

    Child ``j`` owns tree-ordered label positions ``[child_lo[j], child_hi[j])`` (``pos``
    maps a label to its position); its positives are the ``rows`` having one of them.
    Every classifier is trained on exactly ``rows`` (the points reaching the parent), by
    the squared-hinge SVM (``loss`` 0: all the children in one
    :func:`~featagg_core._kernels.linear.l2svc_dual_cd_block` solve whose visiting order
    comes from ``node_seed``, so a child's weights do not depend on which children share
    its batch) or logistic regression (``loss`` 1: one dual solve per child, seeded by
    ``child_seed``; ``child_seed`` also places each child's calibration sample).

    Calibration data: for each classifier, the decision values ``z_i = w^T x_i`` (+ bias,
    pruned weights, as at prediction)
    of its positives and of its negatives, each class subsampled deterministically to at
    most ``calib_rows`` rows weighted up to stand for all, are added to a histogram ``hist``
    (2 x n_bins: row 0 negatives, row 1 positives) of ``n_bins`` bins over
    [-z_max, z_max]; the caller fits a sigmoid to it (Platt scaling).

    ``stop`` (one-element uint8) is polled between classifiers and in every solver pass:
    once it is 1 the kernel returns what it has (the caller discards it).

    Warm start (squared hinge only; the logistic children ignore it): ``warm_cnt`` (one
    count per child, or empty for a cold start), ``warm_pos`` (int32 positions among
    ``rows``) and ``warm_val`` hold the non-zero starting dual variables of child ``j``
    as its ``warm_cnt[j]`` next entries -- what ``keep_duals`` returned for the same
    children on the same rows (a solve at another C). With ``keep_duals`` the final
    non-zero duals come back in that form (children with no classifier have none);
    without, three empty arrays. Only non-zeros are kept: points beyond the margin have
    ``alpha = 0``, so the kept duals are the support vectors.

    Returns (counts, feats, vals, bias_w, n_iter, hist, dual_cnt, dual_pos, dual_val):
    weight entries of child ``j`` are the ``counts[j]`` next ones of ``feats``/``vals``
    (global feature ids, ascending), pruned to ``|w| > threshold``; ``bias_w[j]`` is its
    (never pruned) bias weight; the duals as above.
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
    hist = np.zeros((2, n_bins), np.float64)
    cap = max(16, 4 * dl)
    out_f = np.empty(cap, np.int32)
    out_v = np.empty(cap, np.float32)
    counts = np.zeros(nc, np.int64)
    bias_w = np.zeros(nc, np.float32)
    iters = np.zeros(nc, np.int64)
    # squared hinge: every trainable child at once (they share the rows; see
    # l2svc_dual_cd_block), column a of Wt for child block_of[j] = a
    block_of = np.full(nc, -1, np.int64)
    nb = 0
    for j in range(nc):
        if npos[j] < m:
            block_of[j] = nb
            nb += 1
    d_cnt = np.zeros(nc if keep_duals else 0, np.int64)
    d_pos = np.zeros(0, np.int32)
    d_val = np.zeros(0, ld.dtype)
    if loss != 1 and nb > 0:
        Yb = np.empty((nb, m), np.int8)
        for j in range(nc):
            if block_of[j] >= 0:
                Yb[block_of[j]] = ymat[j]
        if warm_cnt.shape[0] == nc:
            alpha0 = np.zeros((m, nb), ld.dtype)
            q = 0
            for j in range(nc):
                for t in range(warm_cnt[j]):
                    if block_of[j] >= 0:
                        alpha0[warm_pos[q], block_of[j]] = warm_val[q]
                    q += 1
        else:
            alpha0 = np.zeros((0, 0), ld.dtype)
        Wt, block_iters, alpha = l2svc_dual_cd_block_warm(lp, li, ld, Yb, dl, C, eps,
                                                          max_iter, bias, node_seed, stop,
                                                          alpha0)
        if keep_duals:
            # grouped by child, rows ascending; alpha is row-major, so read it by rows
            per_b = np.zeros(nb, np.int64)
            for r in range(m):
                for b in range(nb):
                    if alpha[r, b] > 0.0:
                        per_b[b] += 1
            start = np.zeros(nb + 1, np.int64)
            for b in range(nb):
                start[b + 1] = start[b] + per_b[b]
            d_pos = np.empty(start[nb], np.int32)
            d_val = np.empty(start[nb], ld.dtype)
            fill = start[:nb].copy()
            for r in range(m):
                for b in range(nb):
                    a = alpha[r, b]
                    if a > 0.0:
                        d_pos[fill[b]] = r
                        d_val[fill[b]] = a
                        fill[b] += 1
            for j in range(nc):
                if block_of[j] >= 0:
                    d_cnt[j] = per_b[block_of[j]]
    else:
        Wt = np.zeros((dl + 1, 0), ld.dtype)
        block_iters = np.zeros(0, np.int64)
    tot = 0
    for j in range(nc):
        if stop_requested(stop):
            break
        if npos[j] == m:
            # every point is positive: like omikuji, train nothing; a margin of exactly 1
            # gives the node a log-score of 0 (probability 1).
            bias_w[j] = 1.0 / bias if bias != 0 else 0.0
            continue
        y = ymat[j].copy()
        if loss == 1:
            w, it = lr_dual_cd(lp, li, ld, y, dl, C, eps, max_iter, bias, child_seed[j],
                               stop)
        else:
            w = Wt[:, block_of[j]].copy()
            it = block_iters[block_of[j]]
        iters[j] = it
        bias_w[j] = w[dl]
        for f in range(dl):
            if abs(w[f]) <= threshold:
                w[f] = 0.0  # pruned: the calibration sees the weights prediction uses
        if calib_rows > 0:
            nneg = m - npos[j]
            # negatives: every `step`-th from a seeded offset; positives: likewise
            step_n = max(1, (nneg + calib_rows - 1) // calib_rows)
            step_p = max(1, (npos[j] + calib_rows - 1) // calib_rows)
            off_n = child_seed[j] % step_n
            off_p = (child_seed[j] // 7) % step_p
            cn = 0
            cp = 0
            for r in range(m):
                if y[r] > 0:
                    take = cp % step_p == off_p
                    cp += 1
                    wgt = float(step_p)
                else:
                    take = cn % step_n == off_n
                    cn += 1
                    wgt = float(step_n)
                if not take:
                    continue
                z = w[dl] * bias
                for p in range(lp[r], lp[r + 1]):
                    z += w[li[p]] * ld[p]
                hist[1 if y[r] > 0 else 0, calibration_bin(z, n_bins, z_max)] += wgt
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
            if v != 0.0:
                out_f[tot] = feats_g[f]
                out_v[tot] = v
                tot += 1
                c += 1
        counts[j] = c
    return (counts, out_f[:tot].copy(), out_v[:tot].copy(), bias_w, iters, hist, d_cnt,
            d_pos, d_val)


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
def _child_decisions(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr,
                     fm_child, fm_val, bias_w, bias, out):
    """Decision value z = w_c^T x (+ bias) of every child c of node p, written to out[:nc]."""
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
        s = lower_bound(fm_feat, lo, hi, f)
        if s < hi and fm_feat[s] == f:
            v = xv[q]
            for e in range(fm_eptr[s], fm_eptr[s + 1]):
                out[fm_child[e]] += fm_val[e] * v
            lo = s + 1
        else:
            lo = s


@njit(cache=True)
def _child_logscores(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr,
                     fm_child, fm_val, bias_w, bias, cal_a, cal_b, score_power, out):
    """Log-score of every child c of node p, written to out[:nc]: with ``score_power`` 0
    the calibrated log-probability log sigmoid(a_c z + b_c) of the decision value
    z = w_c^T x (+ bias), else the lp-hinge -max(0, 1 - z)^score_power."""
    _child_decisions(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr,
                     fm_child, fm_val, bias_w, bias, out)
    nc = n_children[p]
    fc = first_child[p]
    if score_power == 0:
        for j in range(nc):
            t = cal_a[fc + j] * out[j] + cal_b[fc + j]
            # log sigmoid(t), stable for either sign
            out[j] = -math.log1p(math.exp(-t)) if t >= 0.0 else t - math.log1p(math.exp(t))
    else:
        for j in range(nc):
            mgn = 1.0 - out[j]
            out[j] = -(mgn ** score_power) if mgn > 0.0 else 0.0


@njit(cache=True)
def _child_probs(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr, fm_child,
                 fm_val, bias_w, bias, cal_a, cal_b, score_power, out):
    """exp of :func:`_child_logscores` with one exp per child: sigmoid(a z + b), or
    exp(-max(0, 1 - z)^p)."""
    _child_decisions(p, xi, xv, first_child, n_children, fm_ptr, fm_feat, fm_eptr,
                     fm_child, fm_val, bias_w, bias, out)
    nc = n_children[p]
    fc = first_child[p]
    if score_power == 0:
        for j in range(nc):
            out[j] = 1.0 / (1.0 + math.exp(-(cal_a[fc + j] * out[j] + cal_b[fc + j])))
    else:
        for j in range(nc):
            mgn = 1.0 - out[j]
            out[j] = math.exp(-(mgn ** score_power)) if mgn > 0.0 else 1.0


@njit(cache=True, nogil=True, parallel=PARALLEL)
def beam_predict(Xp, Xi, Xd, roots, first_child, n_children, node_label, leafc,
                 fm_ptr, fm_feat, fm_eptr, fm_child, fm_val, bias_w, bias, cal_a, cal_b,
                 score_power, n_labels, beam, k, max_children):
    """Beam search over every tree, scores averaged over trees, top-k per row.

    Follows omikuji/Parabel/PECOS: a node's log-score is the sum over its path of its
    nodes' log-scores (:func:`_child_logscores`: calibrated log-sigmoid, or lp-hinge as
    PECOS's post-processors); at each step every non-leaf node of the beam is expanded, leaf
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
                                             bias, cal_a, cal_b, score_power, scores)
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
                    _child_probs(p, xi, xv, first_child, n_children, fm_ptr, fm_feat,
                                 fm_eptr, fm_child, fm_val, bias_w, bias, cal_a, cal_b,
                                 score_power, scores)
                    path = math.exp(cur_s[b])
                    fc = first_child[p]
                    for j in range(n_children[p]):
                        lab = node_label[fc + j]
                        if not seen[lab]:
                            seen[lab] = True
                            touched[nt] = lab
                            nt += 1
                        acc[lab] += path * scores[j]
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
