"""Brute-force references the tests compare featagg's sparse kernels with (as stumpy's
``tests/naive.py``): dense numpy written from each method's definition, small inputs only.

Nothing here imports featagg_core's kernels; a reference that needs a fitted estimator
only reads the estimator's learned state (``prototypes_``, ``F_`` ...), never calls the
code under test.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class Clustering:
    """A hand-made stand-in for a fitted Defrag: only ``labels_`` and ``n_clusters_``."""

    def __init__(self, labels):
        self.labels_ = np.asarray(labels, dtype=np.int64)
        self.n_clusters_ = int(self.labels_.max()) + 1


def dense(A) -> np.ndarray:
    """``A`` (sparse or array) as a dense float64 array."""
    return (A.toarray() if sp.issparse(A) else np.asarray(A)).astype(np.float64)


def unit_rows(A):
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    nrm = np.linalg.norm(A, axis=1, keepdims=True)
    return np.where(nrm > 0, A / np.where(nrm > 0, nrm, 1), 0.0)


# ------------------------------------------------------------------ FIAT / REFRAG
def dense_cf(X, labels):
    """FIAT's pseudo co-occurrence ``C^F = X^T X`` kept on same-cluster pairs only."""
    D = dense(X)
    return (D.T @ D) * (labels[:, None] == labels[None, :])


def dense_normalize(C, normalization):
    """``normalize_cooccurrence`` from its definition: "cosine" ``C_ab / sqrt(C_aa C_bb)``,
    "conditional" ``K[b, a] = C_ab / C_aa``, "row" ``C_ab / sum_b C_ab``, "none" ``C``;
    0 where the denominator is 0."""
    if normalization == "cosine":
        s = np.sqrt(np.diag(C))
        o = np.outer(s, s)
        return np.where(o > 0, C / np.where(o > 0, o, 1), 0.0)
    if normalization == "conditional":
        dg = np.diag(C)
        return np.where(dg[None, :] > 0, C / np.where(dg > 0, dg, 1)[None, :], 0.0)
    if normalization == "row":
        rs = C.sum(1, keepdims=True)
        return np.where(rs != 0, C / np.where(rs == 0, 1, rs), 0.0)
    return C


def dense_operator(X, labels, normalization):
    """REFRAG's / FIAT's operator M: the normalised pseudo co-occurrence of ``X``."""
    return dense_normalize(dense_cf(X, labels), normalization)


def dense_impute(X, M, mix):
    """FIAT's rule, dense: keep observed, fill b with mix*sum M_ba x_a / max(1, sum M_ba)."""
    D = dense(X)
    obs = D != 0
    num = D @ M.T
    den = obs.astype(float) @ M.T
    imp = mix * num / np.maximum(1.0, den)
    return np.where(obs, D, imp)


def dense_prototypes(X, Y, labels, normalization):
    """REFRAG's label prototypes: unit rows ``xi_l = M Xn^T y_l`` (Xn: unit-row X)."""
    M = dense_operator(X, labels, normalization)
    Xn = unit_rows(dense(X))
    return unit_rows((M @ (Xn.T @ dense(Y))).T)


def refrag_rerank(r, X, S, k, Ytr, queries=None):
    """Dense re-implementation of ``Refrag.rerank`` from its definition: for every row a
    list of ``(label, score)``, best first. ``queries`` (dense, n x d) replaces the
    unit-row ``X`` as the points compared with the prototypes (e.g. the FIAT-imputed
    points when ``impute_query``)."""
    from featagg_core import metrics
    # the knobs the re-ranking uses: the parameters, or the fitted ones of alpha="auto"
    if r.alpha == "auto":
        alpha, gamma, beta = r.alpha_, r.gamma_, r.propensity_exponent_
    else:
        alpha, gamma, beta = r.alpha, r.gamma, r.propensity_exponent
    Q = unit_rows(dense(X) if queries is None else np.asarray(queries, np.float64))
    P = r.prototypes_.toarray()
    has = np.linalg.norm(P, axis=1) > 0
    w = metrics.inverse_propensity(Ytr)
    w = (w / w.max()) ** beta
    cos = Q @ P.T
    Sd = S.toarray().astype(np.float64)
    stored = S.toarray() != 0                  # test scores are all non-zero when stored
    out = []
    for i in range(Q.shape[0]):
        idx = np.flatnonzero(stored[i])
        order = sorted(idx, key=lambda l: (-Sd[i, l], l))[:r.shortlist_size]
        base = {l: Sd[i, l] for l in order}
        if base and r.score_normalization == "max":
            mx = max(base.values())
            base = {l: v / mx for l, v in base.items()}
        cand = dict()
        aff = lambda l: w[l] * np.exp(-gamma / 2 * (2 - 2 * cos[i, l])) if has[l] else 0.0
        for l, v in base.items():
            cand[l] = alpha * v + (1 - alpha) * aff(l)
        if alpha < 1:
            others = [l for l in range(P.shape[0]) if l not in base and has[l] and cos[i, l] > 0]
            others = sorted(others, key=lambda l: (-cos[i, l], l))[:r.n_prototype_candidates]
            for l in others:
                cand[l] = (1 - alpha) * aff(l)
        ranked = sorted(cand, key=lambda l: (-cand[l], l))[:k]
        out.append([(l, cand[l]) for l in ranked])
    return out


# ------------------------------------------------------------------ ranking metrics
def dense_top(S, k):
    """Every row's top ``k`` columns, best first, ties to the lower column; for a sparse
    ``S`` only stored entries compete (an unstored label is not predicted)."""
    D = S.toarray() if sp.issparse(S) else np.asarray(S)
    stored = (S != 0).toarray() if sp.issparse(S) else np.ones_like(D, bool)
    out = []
    for i in range(D.shape[0]):
        idx = np.flatnonzero(stored[i])
        out.append(sorted(idx, key=lambda l: (-D[i, l], l))[:k])
    return out


def precision_at_k(Y, S, k):
    """P@k = mean over rows of (1/k) #true labels among the row's top k (pyxclib's)."""
    Yd = dense(Y) > 0
    return float(np.mean([Yd[i, top].sum() / k for i, top in enumerate(dense_top(S, k))]))


def ndcg_at_k(Y, S, k):
    """nDCG@k = mean over rows of DCG@k / IDCG@min(k, |y_i|); rows without labels give 0."""
    Yd = dense(Y) > 0
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    vals = []
    for i, top in enumerate(dense_top(S, k)):
        n_true = int(Yd[i].sum())
        dcg = float(sum(disc[j] for j, l in enumerate(top) if Yd[i, l]))
        vals.append(dcg / disc[:min(k, n_true)].sum() if n_true else 0.0)
    return float(np.mean(vals))


# ------------------------------------------------------------------ BMGUFS
def onmtf_symmetric(A, F, S, n_iter):
    """Ding, Li, Peng & Park (KDD 2006) symmetric ONMtF updates, dense, F first then S::

        F <- F * ( (A F S) / (F F^T A F S) ) ** (1/4)
        S <- S * sqrt( (F^T A F) / (F^T F S F^T F) )

    from ``(F, S)`` for ``n_iter`` plain updates (nothing undone). Returns the objectives
    ``||A - F S F^T||_F^2`` (formed densely) before the first and after every update, and
    the final ``F`` and ``S``."""
    A = dense(A)
    F, S = np.array(F, np.float64), np.array(S, np.float64)
    hist = [np.linalg.norm(A - F @ S @ F.T) ** 2]
    for _ in range(n_iter):
        AFS = A @ F @ S
        F = F * (AFS / np.maximum(F @ (F.T @ AFS), 1e-300)) ** 0.25
        FtF = F.T @ F
        S = S * np.sqrt((F.T @ A @ F) / np.maximum(FtF @ S @ FtF, 1e-300))
        hist.append(np.linalg.norm(A - F @ S @ F.T) ** 2)
    return np.array(hist), F, S
