"""Synthetic data of any size with planted structure.

* :func:`make_powerlaw_multilabel` — sparse multi-label data whose label frequencies follow
  a Zipf law and whose features come from label "topics" living inside planted feature
  groups (so classifiers and feature agglomeration have real structure to find).
* :func:`make_attributed_sbm` — an attributed stochastic block model graph whose first
  ``n_informative`` features follow the blocks and the rest are noise.
* :func:`make_zipf_categorical` — Zipf-distributed categorical columns with a binary label
  whose rate ``P(C=1 | value)`` varies from value to value.

Everything is vectorised numpy (no loop over rows, non-zeros or nodes), so large sets are
quick to make (timed in ``benchmarks/results/data_notes.md``). Results depend only on the
arguments and ``random_state``.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import CategoricalData, GraphData, MultiLabelData

__all__ = ["make_powerlaw_multilabel", "make_attributed_sbm", "make_zipf_categorical"]


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be an int, None or a numpy Generator, got "
                     f"{random_state!r}")


def _pos_int(name, v, minimum=1):
    if not isinstance(v, (numbers.Integral, np.integer)) or isinstance(v, bool) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


def _prob(name, v):
    if not isinstance(v, numbers.Real) or not (0.0 <= float(v) <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
    return float(v)


def _zipf_probs(n, a):
    p = np.power(np.arange(1, n + 1, dtype=np.float64), -float(a))
    return p / p.sum()


def _idx_dtype(*sizes):
    return np.int32 if max(sizes) < 2**31 - 1 else np.int64


def _binary_csr(rows, cols, shape):
    """csr 0/1 float32 from (row, col) pairs (duplicates collapse to one)."""
    M = sp.csr_matrix((np.ones(rows.shape[0], dtype=np.float32), (rows, cols)), shape=shape)
    M.sum_duplicates()
    M.data[:] = 1.0
    return M


# ---------------------------------------------------------------------------
# power-law multi-label
# ---------------------------------------------------------------------------

def make_powerlaw_multilabel(n_samples, n_features, n_labels, avg_labels=3.0,
                             avg_features=20.0, feature_clusters=None, random_state=0, *,
                             label_exponent=1.0, noise=0.2, test_size=0.0,
                             return_info=False):
    """Sparse multi-label data with Zipf label frequencies and label-correlated features.

    Generative story:

    1. label ``l`` (in a random order) has probability proportional to ``rank^-label_exponent``;
       a point carries ``1 + Poisson(avg_labels - 1)`` label draws (repeats collapse);
    2. features are split into ``feature_clusters`` planted groups (contiguous blocks of a
       random permutation); every label belongs to one group and has its own "topic": a
       skewed distribution over that group's features starting at a random offset;
    3. a point has ``1 + Poisson(avg_features - 1)`` feature tokens; each comes with
       probability ``1 - noise`` from the topic of one of its labels, otherwise from a
       global Zipf background over all features. ``X`` holds the token counts.

    Parameters
    ----------
    n_samples, n_features, n_labels : int
    avg_labels, avg_features : float, mean labels / feature tokens per point (>= 1)
    feature_clusters : int, optional
        Number of planted feature groups; default ``min(n_labels, max(1, n_features // 20))``.
    label_exponent : float, Zipf exponent of the label frequencies (1.0 = classic Zipf).
    noise : float in [0, 1], share of background feature tokens.
    test_size : float in [0, 1), share of points put in ``X_test``/``Y_test``.
    return_info : bool
        Also return a dict with the planted truth: ``feature_clusters`` (group of every
        feature), ``label_clusters`` (group of every label), ``label_probabilities``.
    random_state : int, None or numpy Generator

    Returns
    -------
    MultiLabelData, or (MultiLabelData, dict) when ``return_info``.
    """
    n = _pos_int("n_samples", n_samples)
    d = _pos_int("n_features", n_features)
    L = _pos_int("n_labels", n_labels)
    for name, v in (("avg_labels", avg_labels), ("avg_features", avg_features)):
        if not isinstance(v, numbers.Real) or not np.isfinite(v) or v < 1:
            raise ValueError(f"{name} must be a number >= 1, got {v!r}")
    if not isinstance(label_exponent, numbers.Real) or not (0 <= label_exponent < 10):
        raise ValueError(f"label_exponent must be a number in [0, 10), got {label_exponent!r}")
    noise = _prob("noise", noise)
    if not isinstance(test_size, numbers.Real) or not (0.0 <= test_size < 1.0):
        raise ValueError(f"test_size must be a number in [0, 1), got {test_size!r}")
    G = (min(L, max(1, d // 20)) if feature_clusters is None
         else _pos_int("feature_clusters", feature_clusters))
    if G > d:
        raise ValueError(f"feature_clusters must be at most n_features = {d}, got {G}")
    rng = _rng(random_state)

    # 1. labels: Zipf over a random order of the label ids
    label_p = np.empty(L)
    label_p[rng.permutation(L)] = _zipf_probs(L, label_exponent)
    n_lab = np.minimum(1 + rng.poisson(avg_labels - 1.0, n), L)
    lab_rows = np.repeat(np.arange(n), n_lab)
    cdf = np.cumsum(label_p)
    lab_cols = np.minimum(np.searchsorted(cdf, rng.random(lab_rows.shape[0]) * cdf[-1],
                                          side="right"), L - 1)
    Y = _binary_csr(lab_rows, lab_cols, (n, L))

    # 2. planted feature groups and label topics
    perm = rng.permutation(d)
    bounds = np.linspace(0, d, G + 1).round().astype(np.int64)     # group g: perm[b_g:b_g+1]
    feature_group = np.empty(d, dtype=np.int64)
    feature_group[perm] = np.repeat(np.arange(G), np.diff(bounds))
    label_group = np.empty(L, dtype=np.int64)
    label_group[rng.permutation(L)] = np.arange(L) % G               # every group used if L>=G
    gsize = np.diff(bounds)[label_group]                               # group size per label
    label_offset = (rng.random(L) * gsize).astype(np.int64)

    # 3. feature tokens
    n_tok = 1 + rng.poisson(avg_features - 1.0, n)
    tok_rows = np.repeat(np.arange(n), n_tok)
    T = tok_rows.shape[0]
    feats = np.empty(T, dtype=np.int64)
    from_topic = rng.random(T) >= noise
    rows_t = tok_rows[from_topic]
    nl = np.diff(Y.indptr)[rows_t]                                      # >= 1 for every row
    pick = Y.indptr[rows_t] + (rng.random(rows_t.shape[0]) * nl).astype(np.int64)
    lab = Y.indices[pick]
    g = label_group[lab]
    size = np.diff(bounds)[g]
    # skewed position inside the topic: U^3 puts most mass on the first few features
    j = (label_offset[lab] + (rng.random(lab.shape[0]) ** 3 * size).astype(np.int64)) % size
    feats[from_topic] = perm[bounds[g] + j]
    nb = T - rows_t.shape[0]
    if nb:
        bg_p = _zipf_probs(d, 1.0)
        bg_order = rng.permutation(d)
        bcdf = np.cumsum(bg_p)
        r = np.minimum(np.searchsorted(bcdf, rng.random(nb) * bcdf[-1], side="right"), d - 1)
        feats[~from_topic] = bg_order[r]
    X = sp.csr_matrix((np.ones(T, dtype=np.float32), (tok_rows, feats)), shape=(n, d))
    X.sum_duplicates()
    idx = _idx_dtype(n, d, X.nnz)
    X.indices = X.indices.astype(idx, copy=False)
    X.indptr = X.indptr.astype(np.int64 if X.nnz >= 2**31 - 1 else idx, copy=False)

    Xt = Yt = None
    if test_size > 0:
        n_test = int(round(n * test_size))
        if 0 < n_test < n:
            order = rng.permutation(n)
            te, tr = np.sort(order[:n_test]), np.sort(order[n_test:])
            X, Xt = X[tr], X[te]
            Y, Yt = Y[tr], Y[te]
    data = MultiLabelData(
        X=X, Y=Y, X_test=Xt, Y_test=Yt,
        feature_names=[f"f{i}" for i in range(d)] if d <= 200_000 else None,
        label_names=[f"label{i}" for i in range(L)] if L <= 200_000 else None,
        name="synthetic-multilabel",
        source=(f"featagg_core.data.synthetic.make_powerlaw_multilabel(n_samples={n}, "
                f"n_features={d}, n_labels={L}, avg_labels={avg_labels}, "
                f"avg_features={avg_features}, feature_clusters={G}, "
                f"label_exponent={label_exponent}, noise={noise}, test_size={test_size}, "
                f"random_state={random_state if not isinstance(random_state, np.random.Generator) else 'Generator'})"))
    if return_info:
        return data, {"feature_clusters": feature_group, "label_clusters": label_group,
                      "label_probabilities": label_p}
    return data


# ---------------------------------------------------------------------------
# attributed stochastic block model
# ---------------------------------------------------------------------------

def _sample_pairs(rng, n_pairs, p):
    """Number and positions of successes among ``n_pairs`` Bernoulli(p) trials, as
    distinct flat positions (exact Binomial count, uniform distinct positions)."""
    m = int(rng.binomial(n_pairs, p)) if n_pairs > 0 and p > 0 else 0
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if m == n_pairs:
        return np.arange(n_pairs, dtype=np.int64)
    return np.sort(rng.choice(n_pairs, size=m, replace=False)).astype(np.int64)


def _bernoulli_block(rng, rows, cols, p):
    """(r, c) of a Bernoulli(p) sparse block over the given row and column id arrays."""
    flat = _sample_pairs(rng, rows.shape[0] * cols.shape[0], p)
    return rows[flat // cols.shape[0]], cols[flat % cols.shape[0]]


def make_attributed_sbm(n_nodes, n_blocks, p_in=0.05, p_out=0.005, n_informative=20,
                        n_noise=80, random_state=0, *, p_feature_in=0.3, p_feature_out=0.03,
                        p_noise=None, return_info=False):
    """Attributed stochastic block model graph.

    Nodes are split into ``n_blocks`` (near-)equal blocks at random; an edge joins two nodes
    of the same block with probability ``p_in`` and of different blocks with ``p_out``
    (undirected, no self loops). Features ``0 .. n_informative-1`` are informative:
    feature ``f`` belongs to block ``f % n_blocks`` and is on with probability
    ``p_feature_in`` for nodes of that block, ``p_feature_out`` otherwise. The remaining
    ``n_noise`` features are on with probability ``p_noise`` regardless of the block
    (default: the average rate of an informative feature, so that feature frequency alone
    does not reveal which are informative). ``y`` holds each node's block.

    Parameters
    ----------
    n_nodes : int
        Number of nodes (>= 1).
    n_blocks : int
        Number of blocks (1 .. n_nodes).
    p_in, p_out : float in [0, 1], default=0.05, 0.005
        Edge probability within a block and between blocks.
    n_informative : int, default=20
        Number of informative features.
    n_noise : int, default=80
        Number of noise features.
    random_state : int, None or numpy Generator, default=0
        Seeds everything.
    p_feature_in, p_feature_out : float in [0, 1], default=0.3, 0.03
        Probability that an informative feature is on for a node of its block / of another.
    p_noise : float in [0, 1], optional
        Probability that a noise feature is on; default the average informative rate.
    return_info : bool, default=False
        Also return the planted truth.

    Returns
    -------
    GraphData or (GraphData, dict)
        The graph; with ``return_info`` also a dict: ``informative`` (feature indices),
        ``blocks`` (block of every node), ``feature_blocks`` (block of every informative
        feature).

    Raises
    ------
    ValueError
        For a parameter out of range (e.g. more blocks than nodes).
    """
    n = _pos_int("n_nodes", n_nodes)
    K = _pos_int("n_blocks", n_blocks)
    if K > n:
        raise ValueError(f"n_blocks must be at most n_nodes = {n}, got {K}")
    n_inf = _pos_int("n_informative", n_informative, 0)
    n_noi = _pos_int("n_noise", n_noise, 0)
    p_in, p_out = _prob("p_in", p_in), _prob("p_out", p_out)
    pf_in, pf_out = _prob("p_feature_in", p_feature_in), _prob("p_feature_out", p_feature_out)
    if p_noise is None:
        p_noise = (pf_in + (K - 1) * pf_out) / K
    p_noise = _prob("p_noise", p_noise)
    rng = _rng(random_state)

    blocks = rng.permutation(np.arange(n) % K).astype(np.int64)
    members = [np.flatnonzero(blocks == b) for b in range(K)]   # loop over blocks only
    src, dst = [], []
    for a in range(K):
        ma = members[a]
        # within block: upper triangle of ma x ma
        na = ma.shape[0]
        flat = _sample_pairs(rng, na * (na - 1) // 2, p_in)
        if flat.size:
            # invert the triangular index: pair (i, j), i < j, at i*(2na-i-1)/2 + (j-i-1)
            i = (2 * na - 1 - np.sqrt((2 * na - 1) ** 2 - 8 * flat.astype(np.float64))) // 2
            i = i.astype(np.int64)
            start = i * (2 * na - i - 1) // 2
            # guard against floating-point off-by-one
            low = flat < start
            i[low] -= 1
            start = i * (2 * na - i - 1) // 2
            nxt = (i + 1) * (2 * na - i - 2) // 2
            high = flat >= nxt
            i[high] += 1
            start = i * (2 * na - i - 1) // 2
            j = flat - start + i + 1
            src.append(ma[i])
            dst.append(ma[j])
        for b in range(a + 1, K):
            r, c = _bernoulli_block(rng, ma, members[b], p_out)
            src.append(r)
            dst.append(c)
    src = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    A = _binary_csr(np.r_[src, dst], np.r_[dst, src], (n, n))

    d = n_inf + n_noi
    rows, cols = [], []
    feat_block = np.arange(n_inf, dtype=np.int64) % K
    for b in range(K):
        fb = np.flatnonzero(feat_block == b)
        if fb.size == 0:
            continue
        r, c = _bernoulli_block(rng, members[b], fb, pf_in)
        rows.append(r)
        cols.append(c)
        others = np.flatnonzero(blocks != b)
        r, c = _bernoulli_block(rng, others, fb, pf_out)
        rows.append(r)
        cols.append(c)
    if n_noi:
        r, c = _bernoulli_block(rng, np.arange(n), np.arange(n_inf, d), p_noise)
        rows.append(r)
        cols.append(c)
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    X = _binary_csr(rows, cols, (n, d))
    data = GraphData(
        A=A, X=X, y=blocks.copy(), feature_names=[f"f{i}" for i in range(d)],
        class_names=[f"block {b}" for b in range(K)], name="synthetic-graph",
        source=(f"featagg_core.data.synthetic.make_attributed_sbm(n_nodes={n}, n_blocks={K}, "
                f"p_in={p_in}, p_out={p_out}, n_informative={n_inf}, n_noise={n_noi}, "
                f"p_feature_in={pf_in}, p_feature_out={pf_out}, p_noise={p_noise:.4g}, "
                f"random_state={random_state if not isinstance(random_state, np.random.Generator) else 'Generator'})"))
    if return_info:
        return data, {"informative": np.arange(n_inf, dtype=np.int64), "blocks": blocks,
                      "feature_blocks": feat_block}
    return data


# ---------------------------------------------------------------------------
# Zipf categorical columns with a binary label
# ---------------------------------------------------------------------------

def make_zipf_categorical(n_rows, n_values, zipf_a=1.1, n_columns=1, random_state=0, *,
                          base_rate=0.25, effect_scale=1.5, return_info=False):
    """Categorical columns with Zipf value frequencies and a binary label.

    Column ``c`` draws value ranks with probability proportional to ``rank^-zipf_a`` over
    ``n_values`` values (named ``"c{c}_v{i}"`` in a random order, so the name does not give
    the frequency away). Every value has an effect ``e ~ Normal(0, effect_scale)`` and the
    label is Bernoulli(``sigmoid(logit(base_rate) + sum_c e_c[value_c])``), so
    ``P(C=1 | value)`` varies widely between values and compressing the vocabulary loses
    information unless similar-rate values share a bucket.

    Parameters
    ----------
    n_rows : int
        Number of rows (>= 1).
    n_values : int
        Number of distinct values per column (>= 1).
    zipf_a : float in [0, 10), default=1.1
        The Zipf exponent of the value frequencies.
    n_columns : int, default=1
        Number of categorical columns.
    random_state : int, None or numpy Generator, default=0
        Seeds everything.
    base_rate : float in (0, 1), default=0.25
        The label's rate for a value without effect.
    effect_scale : float >= 0, default=1.5
        Standard deviation of the values' effects on the label's logit.
    return_info : bool, default=False
        Also return the planted truth.

    Returns
    -------
    CategoricalData or (CategoricalData, dict)
        The table (columns ``col0``..); with ``return_info`` also a dict:
        ``value_probabilities`` (n_columns x n_values, by value id), ``effects`` (same
        shape), ``vocabulary`` (list of arrays of value names), ``positive_rate`` (per row).

    Raises
    ------
    ValueError
        For a parameter out of range.
    """
    import pandas as pd
    n = _pos_int("n_rows", n_rows)
    V = _pos_int("n_values", n_values)
    C = _pos_int("n_columns", n_columns)
    if not isinstance(zipf_a, numbers.Real) or not (0 <= zipf_a < 10):
        raise ValueError(f"zipf_a must be a number in [0, 10), got {zipf_a!r}")
    base_rate = _prob("base_rate", base_rate)
    if not (0 < base_rate < 1):
        raise ValueError(f"base_rate must be a number in (0, 1), got {base_rate!r}")
    if not isinstance(effect_scale, numbers.Real) or effect_scale < 0:
        raise ValueError(f"effect_scale must be a number >= 0, got {effect_scale!r}")
    rng = _rng(random_state)

    zp = _zipf_probs(V, zipf_a)
    cdf = np.cumsum(zp)
    logit = np.full(n, np.log(base_rate / (1 - base_rate)))
    table, probs, effects, vocabs = {}, np.empty((C, V)), np.empty((C, V)), []
    for c in range(C):                                   # loop over columns only
        value_of_rank = rng.permutation(V)               # value id of each frequency rank
        p = np.empty(V)
        p[value_of_rank] = zp
        ranks = np.minimum(np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right"), V - 1)
        codes = value_of_rank[ranks]
        e = rng.normal(0.0, effect_scale, V)
        logit += e[codes]
        vocab = np.char.add(f"c{c}_v", np.arange(V).astype(str)).astype(object)
        table[f"col{c}"] = vocab[codes]
        probs[c], effects[c] = p, e
        vocabs.append(vocab)
    rate = 1.0 / (1.0 + np.exp(-logit))
    labels = (rng.random(n) < rate).astype(np.int8)
    data = CategoricalData(
        table=pd.DataFrame(table), labels=labels, label_name="label",
        name="synthetic-table",
        source=(f"featagg_core.data.synthetic.make_zipf_categorical(n_rows={n}, n_values={V}, "
                f"zipf_a={zipf_a}, n_columns={C}, base_rate={base_rate}, "
                f"effect_scale={effect_scale}, "
                f"random_state={random_state if not isinstance(random_state, np.random.Generator) else 'Generator'})"))
    if return_info:
        return data, {"value_probabilities": probs, "effects": effects, "vocabulary": vocabs,
                      "positive_rate": rate}
    return data
