"""numba kernels for :mod:`featagg_core.vocab.compressor` (submodular vocabulary compression).

Notation shared by every kernel
-------------------------------
The ``n`` distinct values of a column are sorted by P(C = 0 | x).  ``P0`` and ``P1``
(int64, length ``n + 1``) are the prefix sums of the label-0 and label-1 counts in that
order, so the values ``a .. b-1`` (a bucket ``[a, b)``) hold ``P0[b] - P0[a]`` zeros and
``P1[b] - P1[a]`` ones.  A *split point* ``t`` in ``1 .. n-1`` cuts between sorted values
``t-1`` and ``t``; a set ``S`` of split points (plus the implicit 0 and n) defines the
buckets.  With ``g(A0, A1) = A0 log(A0/A) + A1 log(A1/A)`` (``A = A0 + A1``),

    F(S) = I(Z_S; C) = (sum over buckets g(bucket) - g(everything)) / N      [nats]

and the marginal gain of ``t`` between its neighbours ``s' < t < s''`` in ``S`` is
``(g[s', t) + g[t, s'') - g[s', s'')) / N``: O(1) from the prefix sums once the
neighbours are known.  Neighbours come from a 64-ary bit tree over the positions
(predecessor / successor in O(log_64 n) word operations, the role the paper gives its
O(log n) search structure; a Fenwick tree does the same with more cache misses) or, in
the left-to-right passes of the thresholding algorithm, from two moving pointers.

Kernels work in the unnormalised unit (nats x N); callers divide by N.
"""
import numpy as np
from numba import njit

from featagg_core._kernels._common import splitmix64
from featagg_core._kernels.stopflag import stop_requested

_INF = np.inf


@njit(cache=True, nogil=True, inline="always")
def _g(a0, a1):
    """N-weighted negative conditional entropy of one bucket with counts (a0, a1)."""
    a = a0 + a1
    r = 0.0
    if a0 > 0:
        r += a0 * np.log(a0 / a)
    if a1 > 0:
        r += a1 * np.log(a1 / a)
    return r


@njit(cache=True, nogil=True, inline="always")
def _bucket(P0, P1, a, b):
    return _g(float(P0[b] - P0[a]), float(P1[b] - P1[a]))


@njit(cache=True, nogil=True, inline="always")
def _gain(P0, P1, a, t, b):
    return _bucket(P0, P1, a, t) + _bucket(P0, P1, t, b) - _bucket(P0, P1, a, b)


@njit(cache=True, nogil=True)
def objective(P0, P1, splits):
    """N x I(Z_S; C) for the split points ``splits`` (any order, values in 1..n-1)."""
    n = P0.shape[0] - 1
    s = np.sort(splits)
    total = 0.0
    prev = 0
    for i in range(s.shape[0]):
        t = s[i]
        if t <= prev or t >= n:
            continue
        total += _bucket(P0, P1, prev, t)
        prev = t
    total += _bucket(P0, P1, prev, n)
    return total - _bucket(P0, P1, 0, n)


@njit(cache=True, nogil=True)
def gains_from_scratch(P0, P1, splits, cands):
    """Gain of each candidate w.r.t. ``splits`` by two full objective evaluations (tests)."""
    base = objective(P0, P1, splits)
    out = np.empty(cands.shape[0])
    tmp = np.empty(splits.shape[0] + 1, np.int64)
    tmp[: splits.shape[0]] = splits
    for i in range(cands.shape[0]):
        tmp[-1] = cands[i]
        out[i] = objective(P0, P1, tmp) - base
    return out


# --------------------------------------------------------------------------------------
# 64-ary bit tree over positions 0..M: membership bits per level, predecessor and
# successor in O(log_64 n) word operations (a flat van Emde Boas-style layout; the
# bottom level for n = 10^6 is 125 KB, so queries stay in cache)
# --------------------------------------------------------------------------------------
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DB_TABLE = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59,
                      36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60,
                      41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31,
                      10, 25, 14, 19, 9, 13, 8, 7, 6], dtype=np.int64)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _lowbit(x):
    """Index of the lowest set bit of a non-zero uint64."""
    return _DB_TABLE[((x & (~x + _ONE)) * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True, nogil=True, inline="always")
def _highbit(x):
    """Index of the highest set bit of a non-zero uint64."""
    x |= x >> np.uint64(1)
    x |= x >> np.uint64(2)
    x |= x >> np.uint64(4)
    x |= x >> np.uint64(8)
    x |= x >> np.uint64(16)
    x |= x >> np.uint64(32)
    x = (x >> _ONE) + _ONE
    return _DB_TABLE[(x * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True, nogil=True)
def _bt_new(M):
    """Bit tree for positions 0..M: ``(words, offsets, n_levels)``."""
    sizes = np.empty(12, np.int64)
    L = 0
    cnt = M + 1
    while True:
        w = (cnt + 63) // 64
        sizes[L] = w
        L += 1
        if w == 1:
            break
        cnt = w
    offs = np.zeros(L + 1, np.int64)
    for i in range(L):
        offs[i + 1] = offs[i] + sizes[i]
    return np.zeros(offs[L], np.uint64), offs, L


@njit(cache=True, nogil=True, inline="always")
def _bt_set(words, offs, L, t):
    for lev in range(L):
        w = t >> 6
        words[offs[lev] + w] |= _ONE << np.uint64(t & 63)
        t = w


@njit(cache=True, nogil=True)
def _bt_pred(words, offs, L, t):
    """Largest member < t, or -1."""
    lev = 0
    while lev < L:
        w = t >> 6
        b = t & 63
        word = words[offs[lev] + w] & ((_ONE << np.uint64(b)) - _ONE)
        if word != _ZERO:
            x = (w << 6) | _highbit(word)
            while lev > 0:  # descend taking the highest member each time
                lev -= 1
                x = (x << 6) | _highbit(words[offs[lev] + x])
            return x
        if w == 0:
            return -1
        t = w
        lev += 1
    return -1


@njit(cache=True, nogil=True)
def _bt_succ(words, offs, L, t):
    """Smallest member > t, or -1."""
    lev = 0
    while lev < L:
        w = t >> 6
        b = t & 63
        if b == 63:
            word = _ZERO
        else:
            word = words[offs[lev] + w] & (_ALL << np.uint64(b + 1))
        if word != _ZERO:
            x = (w << 6) | _lowbit(word)
            while lev > 0:
                lev -= 1
                x = (x << 6) | _lowbit(words[offs[lev] + x])
            return x
        if lev + 1 < L:
            pass
        t = w
        lev += 1
    return -1

@njit(cache=True, nogil=True)
def neighbour_gains(P0, P1, splits, cands):
    """Gains of ``cands`` w.r.t. ``splits`` through the bit-tree oracle the greedy uses."""
    n = P0.shape[0] - 1
    words, offs, L = _bt_new(n)
    _bt_set(words, offs, L, 0)
    _bt_set(words, offs, L, n)
    for i in range(splits.shape[0]):
        _bt_set(words, offs, L, splits[i])
    out = np.empty(cands.shape[0])
    for i in range(cands.shape[0]):
        t = cands[i]
        a = _bt_pred(words, offs, L, t)
        b = _bt_succ(words, offs, L, t)
        if _bt_pred(words, offs, L, t + 1) == t:  # t itself is in S: gain 0
            out[i] = 0.0
        else:
            out[i] = _gain(P0, P1, a, t, b)
    return out


@njit(cache=True, nogil=True)
def stochastic_greedy(P0, P1, k, eps, seed):
    """Stochastic greedy (Mirzasoleiman et al. 2015) for ``k`` split points.

    Each step samples ``ceil((n-1)/k * ln(1/eps))`` candidates without replacement from
    the pool of positions not yet chosen (partial Fisher-Yates on a swap-remove array)
    and adds the best one (ties: the earliest sampled).  The neighbours of a candidate in
    S come from the bit tree, so one step costs O(sample * log_64 n) and the whole run
    O(n ln(1/eps) log n).

    A candidate whose gain is 0 can never gain again (gains only shrink and stay >= 0),
    so it leaves the pool for good.  If no sampled candidate has a positive gain, the
    whole pool is examined once (dropping its zero-gain members); the run stops early
    when nothing positive is left (more buckets cannot raise I(Z;C)).

    Returns ``(chosen, gains)``: positions in the order chosen and their gains (N nats).
    """
    n = P0.shape[0] - 1
    M = n - 1
    k = min(k, M)
    chosen = np.empty(max(k, 0), np.int64)
    gains = np.empty(max(k, 0))
    if k <= 0:
        return chosen, gains
    words, offs, L = _bt_new(n)
    _bt_set(words, offs, L, 0)
    _bt_set(words, offs, L, n)
    cand = np.arange(1, M + 1).astype(np.int32)
    gbuf = np.empty(M)
    rm = np.empty(M, np.int64)
    R = M
    ssize = max(1, int(np.ceil(M / k * np.log(1.0 / eps))))
    state = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + _ONE
    for step in range(k):
        if R == 0:
            return chosen[:step], gains[:step]
        s = min(ssize, R)
        best = 0.0
        best_i = -1
        for i in range(s):
            if s < R:
                state, r = splitmix64(state)     # a stream private to this call
                j = i + int((r >> np.uint64(11)) % np.uint64(R - i))
                tmp = cand[i]
                cand[i] = cand[j]
                cand[j] = tmp
            t = np.int64(cand[i])
            gv = _gain(P0, P1, _bt_pred(words, offs, L, t), t, _bt_succ(words, offs, L, t))
            gbuf[i] = gv
            if gv > best:
                best = gv
                best_i = i
        e = s
        if best_i < 0 and s < R:  # nothing useful sampled: examine the whole pool once
            for i in range(s, R):
                t = np.int64(cand[i])
                gv = _gain(P0, P1, _bt_pred(words, offs, L, t), t, _bt_succ(words, offs, L, t))
                gbuf[i] = gv
                if gv > best:
                    best = gv
                    best_i = i
            e = R
        nr = 0
        for i in range(e):
            if gbuf[i] <= 0.0 or i == best_i:
                rm[nr] = i
                nr += 1
        t = np.int64(cand[best_i]) if best_i >= 0 else -1
        for r in range(nr - 1, -1, -1):  # descending: swapped-in tails are never removed
            cand[rm[r]] = cand[R - 1]
            R -= 1
        if best_i < 0:
            return chosen[:step], gains[:step]
        _bt_set(words, offs, L, t)
        chosen[step] = t
        gains[step] = best
    return chosen, gains


@njit(cache=True, nogil=True)
def max_singleton_gain(P0, P1, lo, hi):
    """max over t in (lo, hi) of the gain of t with neighbours lo, hi (0.0 if empty)."""
    best = 0.0
    for t in range(lo + 1, hi):
        gv = _gain(P0, P1, lo, t, hi)
        if gv > best:
            best = gv
    return best


@njit(cache=True, nogil=True)
def threshold_greedy(P0, P1, k, eps, d):
    """Badanidiyuru-Vondrak decreasing-threshold greedy for ``k`` split points.

    Level ``l`` has threshold ``tau_l = d / (1+eps)^l``; one left-to-right pass per level
    adds every position whose gain is >= tau_l (the neighbours of the scanned position
    are a running "previous chosen" and a pointer to the next chosen, so a pass is O(n)
    and no tree is needed).  Gains only shrink (submodularity), so a position whose last
    computed gain is below tau is skipped without recomputation, and levels at which no
    position can qualify (the largest such upper bound is below tau) are jumped over.
    The paper stops at ``tau < eps d / k`` (where the (1 - 1/e - eps) guarantee already
    holds); we continue down the same grid until ``k`` positions are chosen or no
    position has a positive gain, which can only add value.  The level of each pick is
    returned so that chunks run separately (the distributed variant, which passes the
    global ``d``; a negative ``d`` means "compute it here") merge into exactly the order
    of one synchronous run.

    Returns ``(chosen, gains, levels)`` in the order chosen.
    """
    n = P0.shape[0] - 1
    M = n - 1
    k = min(k, max(M, 0))
    chosen = np.empty(max(k, 0), np.int64)
    gains = np.empty(max(k, 0))
    levels = np.empty(max(k, 0), np.int64)
    if k <= 0:
        return chosen, gains, levels
    if d < 0:
        d = max_singleton_gain(P0, P1, 0, n)
    n_sel = 0
    if d <= 0.0:
        return chosen[:0], gains[:0], levels[:0]
    ins = np.zeros(n + 1, np.bool_)
    ins[0] = True
    ins[n] = True
    ub = np.full(n + 1, _INF)
    lg = np.log(1.0 + eps)
    level = 0
    while n_sel < k:
        tau = d / (1.0 + eps) ** level
        mx = 0.0
        prev = 0
        nxt = 1
        while not ins[nxt]:
            nxt += 1
        for t in range(1, n):
            if nxt == t:
                prev = t
                nxt = t + 1
                while not ins[nxt]:
                    nxt += 1
                continue
            if ub[t] >= tau:
                gv = _gain(P0, P1, prev, t, nxt)
                ub[t] = gv
                if gv >= tau and gv > 0.0:
                    ins[t] = True
                    chosen[n_sel] = t
                    gains[n_sel] = gv
                    levels[n_sel] = level
                    n_sel += 1
                    prev = t
                    if n_sel == k:
                        break
                    continue
            if ub[t] > mx:
                mx = ub[t]
        if mx <= 0.0:
            break
        # next level whose threshold some position may still reach
        # (levels below ceil(x) - 1 have tau > (1 + eps) mx: nothing there can qualify)
        nl = max(level + 1, int(np.ceil(np.log(d / mx) / lg)) - 1)
        while d / (1.0 + eps) ** nl > mx:
            nl += 1
        level = nl
    return chosen[:n_sel], gains[:n_sel], levels[:n_sel]


@njit(cache=True, nogil=True)
def _best_cut(P0, P1, prev, a_lo, a_hi, b):
    """``max over a in [a_lo, a_hi) of prev[a] + g[a, b)`` and its first argmax (``a_lo``
    when every ``prev[a]`` is -inf): one cell of the bucket DP."""
    best = -_INF
    bi = a_lo
    for a in range(a_lo, a_hi):
        pa = prev[a]
        if pa == -_INF:
            continue
        v = pa + _bucket(P0, P1, a, b)
        if v > best:
            best = v
            bi = a
    return best, bi


@njit(cache=True, nogil=True)
def _dp_result(P0, P1, prev, arg, m, n):
    """``(splits, value)`` of a finished bucket DP: the cuts read back from the argmax table
    ``arg`` (``arg[j, b]``: best last cut of ``j`` buckets ending at ``b``) and the optimum
    ``prev[n]`` in N nats, as a gain over a single bucket."""
    value = prev[n] - _bucket(P0, P1, 0, n)
    splits = np.empty(m - 1, np.int64)
    b = n
    for j in range(m, 1, -1):
        a = arg[j, b]
        splits[j - 2] = a
        b = a
    return splits, value


@njit(cache=True, nogil=True)
def dp_optimal(P0, P1, m, stop):
    """Exact optimum over contiguous partitions into ``m`` buckets (Kurkoski & Yagi 2014).

    ``D[j, b] = max_a D[j-1, a] + g[a, b)``: O(n^2 m) time, O(n m) memory for the
    back-pointers.  Returns ``(splits, value)`` with value in N nats.  ``stop`` (a
    one-element uint8 array another thread may set to 1) is read once per cell row
    ``b``; when set, the result is meaningless and the caller discards it.
    """
    n = P0.shape[0] - 1
    m = min(m, n)
    prev = np.full(n + 1, -_INF)
    prev[0] = 0.0
    cur = np.full(n + 1, -_INF)
    arg = np.zeros((m + 1, n + 1), np.int32)
    for j in range(1, m + 1):
        for b in range(n + 1):
            cur[b] = -_INF
        for b in range(j, n - (m - j) + 1):
            if stop_requested(stop):
                break
            best, bi = _best_cut(P0, P1, prev, j - 1, b, b)
            cur[b] = best
            arg[j, b] = bi
        for b in range(n + 1):
            prev[b] = cur[b]
    return _dp_result(P0, P1, prev, arg, m, n)


@njit(cache=True, nogil=True)
def assign_sorted(n, splits):
    """Bucket (0..len(splits)) of each sorted position 0..n-1 for sorted ``splits``."""
    out = np.empty(n, np.int64)
    j = 0
    ns = splits.shape[0]
    for i in range(n):
        while j < ns and splits[j] <= i:
            j += 1
        out[i] = j
    return out


@njit(cache=True, nogil=True)
def divisive_kl(c0, c1, init, m, max_iter, tol, stop):
    """Information-theoretic divisive clustering (Dhillon, Mallela & Kumar 2003).

    k-means with the KL divergence: each value x (weight n_x, class distribution
    p(C | x)) goes to ``argmin_j KL(p(C|x) || q_j)`` over all ``m`` cluster centres
    q_j = p(C | W_j) (the weighted mean of its members), until the objective
    ``sum_x n_x KL(p(C|x) || q_{W(x)})`` (= N (I(X;C) - I(W;C))) stops decreasing by more
    than ``tol`` (relative) or ``max_iter`` iterations.  The assignment step compares
    every value with every centre, O(n m) per iteration, as in the paper (which is
    written for any number of classes).  Empty clusters keep their previous centre.
    ``stop`` (one-element uint8 array, set by another thread) is read every 1024 values;
    when set, the run ends early and the caller discards the labels.

    Returns ``(labels, n_iter)``.
    """
    n = c0.shape[0]
    lab = init.copy()
    s0 = np.zeros(m)
    s1 = np.zeros(m)
    lq0 = np.zeros(m)
    lq1 = np.zeros(m)
    q0 = np.full(m, 0.5)
    last = _INF
    it = 0
    for it in range(1, max_iter + 1):
        s0[:] = 0.0
        s1[:] = 0.0
        for i in range(n):
            s0[lab[i]] += c0[i]
            s1[lab[i]] += c1[i]
        for j in range(m):
            tot = s0[j] + s1[j]
            if tot > 0:
                q0[j] = s0[j] / tot
            q = q0[j]
            lq0[j] = np.log(q) if q > 0 else -_INF
            lq1[j] = np.log(1.0 - q) if q < 1 else -_INF
        obj = 0.0
        changed = 0
        for i in range(n):
            if (i & 1023) == 0 and stop_requested(stop):
                break
            a = c0[i]
            b = c1[i]
            # argmin KL(p || q_j) = argmax (a log q0_j + b log q1_j)
            best = -_INF
            bj = lab[i]
            for j in range(m):
                v = 0.0
                if a > 0:
                    v += a * lq0[j]
                if b > 0:
                    v += b * lq1[j]
                if v > best:
                    best = v
                    bj = j
            if bj != lab[i]:
                changed += 1
                lab[i] = bj
            obj -= best
        if changed == 0 or last - obj <= tol * abs(obj) or stop_requested(stop):
            break
        last = obj
    return lab, it


@njit(cache=True, nogil=True)
def refine_splits(P0, P1, splits, max_sweeps):
    """Local search: move each split point to its best position between its neighbours.

    Each move can only increase F (the two buckets it separates are re-cut optimally),
    so a greedy solution keeps its guarantee.  O(n) per sweep.  Returns sorted splits.
    """
    n = P0.shape[0] - 1
    s = np.sort(splits)
    k = s.shape[0]
    for sweep in range(max_sweeps):
        moved = 0
        for j in range(k):
            a = 0 if j == 0 else s[j - 1]
            b = n if j == k - 1 else s[j + 1]
            cur = s[j]
            best = _bucket(P0, P1, a, cur) + _bucket(P0, P1, cur, b)
            bt = cur
            for t in range(a + 1, b):
                v = _bucket(P0, P1, a, t) + _bucket(P0, P1, t, b)
                if v > best + 1e-12 * abs(best):
                    best = v
                    bt = t
            if bt != cur:
                s[j] = bt
                moved += 1
        if moved == 0:
            break
    return s


@njit(cache=True, nogil=True)
def merge_column_gains(gains, offsets, budget):
    """Global greedy over independent columns: repeatedly take the column whose next
    greedy gain is largest (the paper's merge of per-column marginal gains).

    ``gains[offsets[c]:offsets[c+1]]`` is column c's greedy gain sequence (normalised
    nats).  Returns how many of its splits each column gets (sum <= budget).
    """
    nc = offsets.shape[0] - 1
    take = np.zeros(nc, np.int64)
    for step in range(budget):
        best = 0.0
        bc = -1
        for c in range(nc):
            p = offsets[c] + take[c]
            if p < offsets[c + 1] and gains[p] > best:
                best = gains[p]
                bc = c
        if bc < 0:
            break
        take[bc] += 1
    return take


# --------------------------------------------------------------------------------------
# chunked kernels for the distributed thresholding algorithm (featagg_core.distributed)
# --------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _chunk_prefix(c0, c1, lo, hi):
    P0 = np.zeros(hi - lo + 1, np.int64)
    P1 = np.zeros(hi - lo + 1, np.int64)
    for i in range(lo, hi):
        P0[i - lo + 1] = P0[i - lo] + c0[i]
        P1[i - lo + 1] = P1[i - lo] + c1[i]
    return P0, P1


@njit(cache=True, nogil=True)
def chunks_max_gain(c0, c1, bounds):
    """Largest singleton gain over chunks ``[bounds[j], bounds[j+1])`` of sorted counts
    (the chunk ends are forced split points, so each chunk is its own sub-problem)."""
    best = 0.0
    for j in range(bounds.shape[0] - 1):
        P0, P1 = _chunk_prefix(c0, c1, bounds[j], bounds[j + 1])
        v = max_singleton_gain(P0, P1, 0, bounds[j + 1] - bounds[j])
        if v > best:
            best = v
    return best


@njit(cache=True, nogil=True)
def chunks_threshold(c0, c1, bounds, offset, k, eps, d):
    """Run :func:`threshold_greedy` (budget ``k``, shared ``d``) on every chunk and return
    the concatenated ``(positions + offset, gains, levels)``."""
    nch = bounds.shape[0] - 1
    pos = np.empty(nch * k, np.int64)
    gains = np.empty(nch * k)
    levels = np.empty(nch * k, np.int64)
    cnt = 0
    for j in range(nch):
        lo = bounds[j]
        P0, P1 = _chunk_prefix(c0, c1, lo, bounds[j + 1])
        ch, g, lv = threshold_greedy(P0, P1, k, eps, d)
        for i in range(ch.shape[0]):
            pos[cnt] = ch[i] + lo + offset
            gains[cnt] = g[i]
            levels[cnt] = lv[i]
            cnt += 1
    return pos[:cnt], gains[:cnt], levels[:cnt]


@njit(cache=True, nogil=True)
def dp_monotone(P0, P1, m, stop):
    """The optimum of :func:`dp_optimal` in O(m n log n) by divide-and-conquer.

    On values sorted by P(C=0|x) the bucket gain ``g[a, b)`` satisfies the quadrangle
    inequality (Iwata & Ozawa, "Quantizer design for outputs of binary-input discrete
    memoryless channels using SMAWK algorithm", ISIT 2014), so the best last cut of
    ``D[j, b]`` is non-decreasing in ``b`` and each layer is solved by computing the middle
    ``b`` over its admissible cuts and recursing on both halves (the usual "divide and
    conquer DP optimisation"). Ties go to the smallest cut. Returns ``(splits, value)``
    with value in N nats, like :func:`dp_optimal` (tests compare the two). ``stop`` is
    read once per layer; when set, the result is meaningless and the caller discards
    it."""
    n = P0.shape[0] - 1
    m = min(m, n)
    prev = np.full(n + 1, -_INF)
    prev[0] = 0.0
    cur = np.full(n + 1, -_INF)
    arg = np.zeros((m + 1, n + 1), np.int32)
    # explicit stack of (lo, hi, opt_lo, opt_hi) ranges of b
    stack = np.empty((4 * (n + 2) + 64, 4), np.int64)
    for j in range(1, m + 1):
        for b in range(n + 1):
            cur[b] = -_INF
        lo_b, hi_b = j, n - (m - j)
        if lo_b > hi_b or stop_requested(stop):
            break
        top = 0
        stack[0, 0] = lo_b
        stack[0, 1] = hi_b
        stack[0, 2] = j - 1
        stack[0, 3] = hi_b - 1
        top = 1
        while top > 0:
            top -= 1
            lo = stack[top, 0]
            hi = stack[top, 1]
            olo = stack[top, 2]
            ohi = stack[top, 3]
            if lo > hi:
                continue
            mid = (lo + hi) >> 1
            best, bi = _best_cut(P0, P1, prev, olo, min(ohi, mid - 1) + 1, mid)
            cur[mid] = best
            arg[j, mid] = bi
            stack[top, 0] = lo
            stack[top, 1] = mid - 1
            stack[top, 2] = olo
            stack[top, 3] = bi
            top += 1
            stack[top, 0] = mid + 1
            stack[top, 1] = hi
            stack[top, 2] = bi
            stack[top, 3] = ohi
            top += 1
        for b in range(n + 1):
            prev[b] = cur[b]
    return _dp_result(P0, P1, prev, arg, m, n)
