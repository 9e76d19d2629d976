"""numba kernels for FIAT (feature imputation) and REFRAG (re-ranking), see
:mod:`featagg_core.agglomeration.fiat` and :mod:`featagg_core.agglomeration.refrag`.

All kernels take csr parts (``indptr``, ``indices``, ``data``) and return arrays. Rows are
processed independently in fixed-size chunks under ``prange``, so results never depend on
the number of threads. Scratch arrays are allocated once per chunk and reset through a
list of touched entries, so a row costs O(its work), never O(d) or O(L).
"""
import numpy as np
from numba import njit, prange

from featagg_core._kernels import PARALLEL
from featagg_core._kernels._common import (
    count_and_reset,
    lower_bound,
    reset_touched,
    scatter_add_row,
)

_CHUNK = 256      # at least this many rows (or features) per parallel work item
_MAX_CHUNKS = 64  # at most this many work items: scratch arrays are allocated per item


@njit(cache=True, nogil=True)
def _chunking(n):
    """(number of chunks, chunk size): a fixed split of n items, independent of threads."""
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    if n_chunks > _MAX_CHUNKS:
        n_chunks = _MAX_CHUNKS
    if n_chunks < 1:
        n_chunks = 1
    size = (n + n_chunks - 1) // n_chunks
    return n_chunks, max(size, 1)


@njit(cache=True, nogil=True)
def _block_row(a, r_indptr, r_indices, r_data, c_indptr, c_indices, c_data,
               lo_f, hi_f, acc, seen, touched):
    """Accumulate row ``a`` of the block-diagonal Gram matrix into ``acc``.

    ``r_*``: X in csr with columns renumbered so every cluster is the contiguous range
    [lo_f, hi_f) (sorted indices). ``c_*``: the same matrix in csc. Returns the number of
    touched (local) columns written to ``touched``.
    """
    nt = 0
    for q in range(c_indptr[a], c_indptr[a + 1]):
        i = c_indices[q]
        va = c_data[q]
        s = r_indptr[i]
        e = r_indptr[i + 1]
        p = lower_bound(r_indices, s, e, lo_f)
        while p < e and r_indices[p] < hi_f:
            b = r_indices[p] - lo_f
            if not seen[b]:
                seen[b] = True
                touched[nt] = b
                nt += 1
            acc[b] += va * r_data[p]
            p += 1
    return nt


@njit(cache=True, nogil=True, parallel=PARALLEL)
def _block_gram_pass(r_indptr, r_indices, r_data, c_indptr, c_indices, c_data, block_lo,
                     block_hi, order, max_block, blk, fill, counts, indptr, indices, data):
    """One pass of :func:`block_gram` over the (renumbered) features ``a``, by chunks:
    without ``fill`` the entries of every output row into ``counts`` (original ids), with
    ``fill`` their indices and values at the row pointers ``indptr``."""
    d = order.shape[0]
    n_chunks, csize = _chunking(d)
    for ch in prange(n_chunks):
        acc = np.zeros(max_block, np.float64)
        seen = np.zeros(max_block, np.bool_)
        touched = np.empty(max_block, np.int64)
        for a in range(ch * csize, min(d, (ch + 1) * csize)):
            k = blk[a]
            lo_f = block_lo[k]
            nt = _block_row(a, r_indptr, r_indices, r_data, c_indptr, c_indices, c_data,
                            lo_f, block_hi[k], acc, seen, touched)
            if not fill:
                counts[order[a]] = count_and_reset(acc, seen, touched, nt)
                continue
            loc = np.sort(touched[:nt])
            pos = indptr[order[a]]
            for t in range(nt):
                b = loc[t]
                if acc[b] != 0.0:
                    # order[] is increasing inside a cluster: indices stay sorted
                    indices[pos] = order[lo_f + b]
                    data[pos] = acc[b]
                    pos += 1
                acc[b] = 0.0
                seen[b] = False


@njit(cache=True, nogil=True)
def block_gram(r_indptr, r_indices, r_data, c_indptr, c_indices, c_data,
               block_lo, block_hi, order, max_block):
    """Pseudo co-occurrence C^F = sum_k X_{F_k}^T X_{F_k} (points x features notation).

    Features are renumbered so cluster k is the range [block_lo[k], block_hi[k]) of new
    ids; ``order[new] = old`` (increasing inside every cluster). Only pairs of features in
    the same cluster are ever formed (Gustavson's row-by-row product restricted to the
    block), so the cost is sum_i sum_k nnz_{ik}^2 and the output has at most sum_k d_k^2
    entries. Returns csr parts (indptr, indices, data) of C^F in the *original* feature
    numbering, indices sorted within each row.

    Two passes over the same enumeration: counts, then values.
    """
    d = order.shape[0]
    n_blocks = block_lo.shape[0]
    # cluster of every new feature id
    blk = np.empty(d, np.int64)
    for k in range(n_blocks):
        for a in range(block_lo[k], block_hi[k]):
            blk[a] = k
    counts = np.zeros(d, np.int64)          # by original feature id
    _block_gram_pass(r_indptr, r_indices, r_data, c_indptr, c_indices, c_data, block_lo,
                     block_hi, order, max_block, blk, False, counts, np.zeros(1, np.int64),
                     np.empty(0, np.int64), np.empty(0, np.float64))
    indptr = np.zeros(d + 1, np.int64)
    for j in range(d):
        indptr[j + 1] = indptr[j] + counts[j]
    indices = np.empty(indptr[d], np.int64)
    data = np.empty(indptr[d], np.float64)
    _block_gram_pass(r_indptr, r_indices, r_data, c_indptr, c_indices, c_data, block_lo,
                     block_hi, order, max_block, blk, True, counts, indptr, indices, data)
    return indptr, indices, data


@njit(cache=True, nogil=True, parallel=PARALLEL)
def impute_rows(x_indptr, x_indices, x_data, t_indptr, t_indices, t_data, mix,
                n_features, out_bound):
    """FIAT imputation of every row of X with the operator T = M^T (csr, d x d).

    For a row x with observed set O (its stored non-zeros), every observed entry is kept
    as it is, and every feature b outside O that some observed feature reaches gets

        mix * sum_{a in O} M[b, a] x_a / max(1, sum_{a in O} M[b, a]),

    i.e. a similarity-weighted average of the observed values once the similarity mass
    reaches 1 and a shrunken one below that. ``out_bound[i]`` is an upper bound of the
    output row length (nnz(x_i) + sum_{a in O} nnz(T_a)). Returns (counts, indices, data)
    laid out at offsets cumsum(out_bound); the caller compacts them.
    """
    n = x_indptr.shape[0] - 1
    offs = np.zeros(n + 1, np.int64)
    for i in range(n):
        offs[i + 1] = offs[i] + out_bound[i]
    indices = np.empty(offs[n], np.int64)
    data = np.empty(offs[n], np.float32)
    counts = np.zeros(n, np.int64)
    n_chunks, csize = _chunking(n)
    for ch in prange(n_chunks):
        num = np.zeros(n_features, np.float64)
        den = np.zeros(n_features, np.float64)
        state = np.zeros(n_features, np.int8)      # 0 untouched, 1 observed, 2 imputed
        touched = np.empty(n_features, np.int64)
        for i in range(ch * csize, min(n, (ch + 1) * csize)):
            s = x_indptr[i]
            e = x_indptr[i + 1]
            for p in range(s, e):
                state[x_indices[p]] = 1
            nt = 0
            for p in range(s, e):
                a = x_indices[p]
                va = x_data[p]
                for q in range(t_indptr[a], t_indptr[a + 1]):
                    b = t_indices[q]
                    st = state[b]
                    if st == 1:
                        continue
                    if st == 0:
                        state[b] = 2
                        touched[nt] = b
                        nt += 1
                    w = t_data[q]
                    num[b] += w * va
                    den[b] += w
            # merge observed (sorted) and imputed (sorted) columns
            imp = np.sort(touched[:nt])
            pos = offs[i]
            p = s
            t = 0
            while p < e or t < nt:
                if t >= nt or (p < e and x_indices[p] < imp[t]):
                    indices[pos] = x_indices[p]
                    data[pos] = x_data[p]
                    pos += 1
                    p += 1
                else:
                    b = imp[t]
                    dd = den[b]
                    v = mix * num[b] / (dd if dd > 1.0 else 1.0)
                    if v != 0.0:
                        indices[pos] = b
                        data[pos] = v
                        pos += 1
                    t += 1
            counts[i] = pos - offs[i]
            for t in range(nt):
                b = touched[t]
                num[b] = 0.0
                den[b] = 0.0
                state[b] = 0
            for p in range(s, e):
                state[x_indices[p]] = 0
    return counts, indices, data


@njit(cache=True, nogil=True)
def _topk_insert(best_s, best_l, kk, s, lab):
    """Insert (s, lab) into the descending list best_* of capacity kk (ties: lower label
    first). Returns nothing; entries with label -1 are empty slots."""
    # position: first slot that (s, lab) beats
    pos = kk
    for j in range(kk):
        bl = best_l[j]
        if bl < 0 or s > best_s[j] or (s == best_s[j] and lab < bl):
            pos = j
            break
    if pos == kk:
        return
    for j in range(kk - 1, pos, -1):
        best_s[j] = best_s[j - 1]
        best_l[j] = best_l[j - 1]
    best_s[pos] = s
    best_l[pos] = lab


@njit(cache=True, nogil=True)
def _topk_clear(best_s, best_l, kk):
    """Empty the top-kk list of :func:`_topk_insert` (label -1, score 0)."""
    for j in range(kk):
        best_l[j] = -1
        best_s[j] = 0.0


@njit(cache=True, nogil=True)
def _nearest_prototypes(pb_s, pb_l, n_proto, touched, nt, in_short, eligible, cosv):
    """The ``n_proto`` touched labels off the shortlist (``in_short`` false) with an
    ``eligible`` prototype (weight > 0 / has_proto) of largest cosine ``cosv``, into the
    top-n_proto list ``pb_*`` (ties: lower label)."""
    _topk_clear(pb_s, pb_l, n_proto)
    for t in range(nt):
        lab = touched[t]
        if not in_short[lab] and eligible[lab] > 0:
            _topk_insert(pb_s, pb_l, n_proto, cosv[lab], lab)


@njit(cache=True, nogil=True, parallel=PARALLEL)
def rerank_rows(q_indptr, q_indices, q_data, pt_indptr, pt_indices, pt_data, weight,
                s_indptr, s_indices, s_data, alpha, gamma, n_proto, k, n_labels):
    """REFRAG re-ranking of every row.

    q: L2-normalised queries (csr n x d); pt: L2-normalised label prototypes, transposed
    (csr d x L); s: the base shortlist with scores already mapped to [0, 1] (csr n x L).
    For every row the candidates are the shortlisted labels plus the ``n_proto`` labels
    whose prototypes have the largest cosine with the query (nearest in Euclidean distance
    on the unit sphere). Candidate l gets

        alpha * s_l + (1 - alpha) * weight_l * exp(-gamma / 2 * ||q - xi_l||^2),
        ||q - xi_l||^2 = 2 - 2 cos(q, xi_l),

    (s_l = 0 off the shortlist; ``weight_l`` is 0 for labels without a prototype, else a
    per-label factor such as a propensity weight). Only prototypes sharing a feature with
    the query can join as extra candidates. Returns the top ``k`` labels (int64, -1
    padded) and their scores, ties towards the lower label.
    """
    n = q_indptr.shape[0] - 1
    out_l = np.full((n, k), -1, np.int64)
    out_s = np.zeros((n, k), np.float64)
    n_chunks, csize = _chunking(n)
    for ch in prange(n_chunks):
        cosv = np.zeros(n_labels, np.float64)
        seen = np.zeros(n_labels, np.bool_)
        touched = np.empty(n_labels, np.int64)
        in_short = np.zeros(n_labels, np.bool_)
        best_s = np.empty(k, np.float64)
        best_l = np.empty(k, np.int64)
        pb_s = np.empty(max(n_proto, 1), np.float64)
        pb_l = np.empty(max(n_proto, 1), np.int64)
        for i in range(ch * csize, min(n, (ch + 1) * csize)):
            nt = 0
            if alpha < 1.0:
                for p in range(q_indptr[i], q_indptr[i + 1]):
                    f = q_indices[p]
                    nt = scatter_add_row(cosv, seen, touched, nt, q_data[p], pt_indptr[f],
                                         pt_indptr[f + 1], pt_indices, pt_data)
            _topk_clear(best_s, best_l, k)
            ss = s_indptr[i]
            se = s_indptr[i + 1]
            for p in range(ss, se):
                lab = s_indices[p]
                in_short[lab] = True
                aff = 0.0
                if alpha < 1.0 and weight[lab] > 0.0:
                    aff = weight[lab] * np.exp(-0.5 * gamma * (2.0 - 2.0 * cosv[lab]))
                sc = alpha * s_data[p] + (1.0 - alpha) * aff
                _topk_insert(best_s, best_l, k, sc, lab)
            if alpha < 1.0 and n_proto > 0:
                _nearest_prototypes(pb_s, pb_l, n_proto, touched, nt, in_short, weight, cosv)
                for j in range(n_proto):
                    lab = pb_l[j]
                    if lab < 0:
                        break
                    aff = weight[lab] * np.exp(-0.5 * gamma * (2.0 - 2.0 * cosv[lab]))
                    _topk_insert(best_s, best_l, k, (1.0 - alpha) * aff, lab)
            for j in range(k):
                out_l[i, j] = best_l[j]
                out_s[i, j] = best_s[j]
            reset_touched(cosv, seen, touched, nt)
            for p in range(ss, se):
                in_short[s_indices[p]] = False
    return out_l, out_s


@njit(cache=True, nogil=True, parallel=PARALLEL)
def row_shortlist(indptr, indices, data, s, mode):
    """Keep the ``s`` best entries of every row (ties: lower column) and map their scores
    to [0, 1]: mode 0 as given, 1 divide by the row maximum, 2 min-max over the kept
    entries (a single kept entry, or all equal, map to 1). Returns (counts, indices,
    data) laid out at offsets cumsum(min(nnz_i, s)), columns in increasing order."""
    n = indptr.shape[0] - 1
    offs = np.zeros(n + 1, np.int64)
    for i in range(n):
        offs[i + 1] = offs[i] + min(indptr[i + 1] - indptr[i], s)
    out_i = np.empty(offs[n], np.int64)
    out_d = np.empty(offs[n], np.float64)
    n_chunks, csize = _chunking(n)
    for ch in prange(n_chunks):
        for i in range(ch * csize, min(n, (ch + 1) * csize)):
            a = indptr[i]
            b = indptr[i + 1]
            m = b - a
            keep = offs[i + 1] - offs[i]
            if keep == 0:
                continue
            vals = data[a:b].astype(np.float64)
            cols = indices[a:b].astype(np.int64)
            if keep < m:
                # sort by (-score, column): stable argsort of -score over column-sorted
                o1 = np.argsort(cols, kind="mergesort")
                vals = vals[o1]
                cols = cols[o1]
                o2 = np.argsort(-vals, kind="mergesort")[:keep]
                vals = vals[o2]
                cols = cols[o2]
                o3 = np.argsort(cols, kind="mergesort")
                vals = vals[o3]
                cols = cols[o3]
            else:
                o1 = np.argsort(cols, kind="mergesort")
                vals = vals[o1]
                cols = cols[o1]
            if mode == 1:
                mx = vals.max()
                if mx > 0.0:
                    vals = vals / mx
            elif mode == 2:
                mx = vals.max()
                mn = vals.min()
                if mx > mn:
                    vals = (vals - mn) / (mx - mn)
                else:
                    vals = np.ones(keep, np.float64)
            for t in range(keep):
                out_i[offs[i] + t] = cols[t]
                out_d[offs[i] + t] = vals[t]
    return offs, out_i, out_d


@njit(cache=True, nogil=True)
def rerank_candidates(q_indptr, q_indices, q_data, pt_indptr, pt_indices, pt_data, has_proto,
                      s_indptr, s_indices, s_data, n_proto, n_labels, width):
    """The candidates :func:`rerank_rows` scores for every row (for alpha < 1), with what
    their score depends on: label (-1 padded), the normalised base score, the cosine with
    the label's prototype and whether it came from the shortlist. Same loops and order of
    summation as :func:`rerank_rows`, so :func:`score_candidates` reproduces its scores
    bit for bit for any alpha, gamma and weights (weights are positive exactly where
    ``has_proto``). Serial: used to tune REFRAG on validation rows."""
    n = q_indptr.shape[0] - 1
    cand_l = np.full((n, width), -1, np.int64)
    cand_b = np.zeros((n, width), np.float64)
    cand_c = np.zeros((n, width), np.float64)
    cand_s = np.zeros((n, width), np.bool_)
    cosv = np.zeros(n_labels, np.float64)
    seen = np.zeros(n_labels, np.bool_)
    touched = np.empty(n_labels, np.int64)
    in_short = np.zeros(n_labels, np.bool_)
    pb_s = np.empty(max(n_proto, 1), np.float64)
    pb_l = np.empty(max(n_proto, 1), np.int64)
    for i in range(n):
        nt = 0
        for p in range(q_indptr[i], q_indptr[i + 1]):
            f = q_indices[p]
            nt = scatter_add_row(cosv, seen, touched, nt, q_data[p], pt_indptr[f],
                                 pt_indptr[f + 1], pt_indices, pt_data)
        c = 0
        ss = s_indptr[i]
        se = s_indptr[i + 1]
        for p in range(ss, se):
            lab = s_indices[p]
            in_short[lab] = True
            cand_l[i, c] = lab
            cand_b[i, c] = s_data[p]
            cand_c[i, c] = cosv[lab]
            cand_s[i, c] = True
            c += 1
        if n_proto > 0:
            _nearest_prototypes(pb_s, pb_l, n_proto, touched, nt, in_short, has_proto, cosv)
            for j in range(n_proto):
                lab = pb_l[j]
                if lab < 0:
                    break
                cand_l[i, c] = lab
                cand_c[i, c] = cosv[lab]
                c += 1
        reset_touched(cosv, seen, touched, nt)
        for p in range(ss, se):
            in_short[s_indices[p]] = False
    return cand_l, cand_b, cand_c, cand_s


@njit(cache=True, nogil=True)
def score_candidates(cand_l, cand_b, cand_c, cand_s, weight, alpha, gamma, k):
    """REFRAG's top-k of every row from :func:`rerank_candidates`' arrays: the same
    scores, ties and -1 padding as :func:`rerank_rows` with these alpha, gamma, weights."""
    n, width = cand_l.shape
    out_l = np.full((n, k), -1, np.int64)
    out_s = np.zeros((n, k), np.float64)
    best_s = np.empty(k, np.float64)
    best_l = np.empty(k, np.int64)
    for i in range(n):
        _topk_clear(best_s, best_l, k)
        for c in range(width):
            lab = cand_l[i, c]
            if lab < 0:
                break
            if cand_s[i, c]:
                aff = 0.0
                if alpha < 1.0 and weight[lab] > 0.0:
                    aff = weight[lab] * np.exp(-0.5 * gamma * (2.0 - 2.0 * cand_c[i, c]))
                _topk_insert(best_s, best_l, k, alpha * cand_b[i, c] + (1.0 - alpha) * aff,
                             lab)
            elif alpha < 1.0:
                aff = weight[lab] * np.exp(-0.5 * gamma * (2.0 - 2.0 * cand_c[i, c]))
                _topk_insert(best_s, best_l, k, (1.0 - alpha) * aff, lab)
        for j in range(k):
            out_l[i, j] = best_l[j]
            out_s[i, j] = best_s[j]
    return out_l, out_s
