"""Block-model-guided unsupervised feature selection on attributed graphs (BMGUFS).

Bai, Nguyen & Davidson, "Block Model Guided Unsupervised Feature Selection", KDD 2020
(arXiv 2007.02376).

Two stages:

1. :class:`~featagg_core.graph.block_model.BlockModel` — a block model ``A ~ F M F^T`` of
   the graph by symmetric orthogonal non-negative matrix tri-factorisation (ONMtF, Ding,
   Li, Peng & Park, KDD 2006), the soft memberships binarised by row argmax, the image
   matrix ``M`` recomputed from the binary ``F`` as block densities, and the relative
   reconstruction error (RRE) ``||A - F M F^T||_F / ||A||_F``.
2. :class:`BMGUFS` — ``n_candidates`` block models from random restarts, the lowest-RRE one
   (or a chosen one) guides a projected-gradient search for non-negative feature weights
   ``r`` (unit L2 norm) such that the graph induced by the weighted features,
   ``Y R Y^T`` with ``R = diag(r)``, respects the block structure (``L_b``) and regenerates
   the image matrix (``L_m``).

Notation (n nodes, f features, k blocks; ``F`` binary n x k, ``D = F^T F``)::

    L_b = ||Y R Y^T - Ybar R Ybar^T||_F^2 / ||Y R Y^T||_F^2,    Ybar = F D^-1 F^T Y
    L_m = sum_i KL(P_i || Q_i),  P = rownorm(M + delta),  Q = rownorm(Dbar R Dbar^T + delta),
          Dbar = D^-1 F^T Y
    g   = (1 - beta_bar) grad L_b / ||grad L_b|| + beta_bar grad L_m / ||grad L_m||
          + gamma / sqrt(f) * 1
    r  <- max(r - eta g, 0) / ||max(r - eta g, 0)||,   r_0 = 1 / sqrt(f)

How it is computed without anything n x n or f x f dense (derivation in the docstring of
:meth:`featagg_core.graph.selection_problem.SelectionProblem.losses`): ``P_F = F D^-1 F^T``
is an orthogonal projector, so with
``G_r = Y R Y^T`` we have ``Ybar R Ybar^T = P_F G_r P_F`` and

    ||G_r - P_F G_r P_F||^2 = ||G_r||^2 - ||P_F G_r P_F||^2,
    ||P_F G_r P_F||^2 = ||S R S^T||^2  with  S = D^-1/2 F^T Y  (k x f),
    ||G_r||^2 = r^T H r               with  H = (Y^T Y) o (Y^T Y)  (sparse f x f),

so ``L_b = 1 - ||S R S^T||^2 / r^T H r``. ``H`` is built once by numba kernels
(:func:`featagg_core.graph.selection_problem.gram_squared`: a symbolic pass counts its entries,
so a too-large H is refused by size; bag-of-words attributes make it nearly full, and
then it is stored dense, which is smaller than CSR and streams contiguous rows); each
iteration costs one mat-vec over the rows of the still non-zero weights plus O(k^2 f)
serial numba work (threaded BLAS on these small products cost more than it saved on a
busy machine). Without labels and without ``n_blocks`` the number of blocks comes from
:func:`featagg_core.graph.block_model.choose_n_blocks` (a clear eigengap, else the
modularity knee; its docstring says why that rule). gamma zeroes weights, so the fitted gamma may leave fewer than d of them:
:meth:`BMGUFS.select` then follows the gamma path — lower gammas of the paper's grid, each
a new search on the same block model — until d stay non-zero, exactly as
:meth:`BMGUFS.fit_gamma_grid` (what the dashboard runs) does in one go; only past the end
of the path does it fill by score, with a :class:`SelectionFilledWarning`.

Choices that follow the paper / the authors' code (github.com/ZilongBai/KDD2020BMGUFS):
the loss terms, the combination of *normalised* gradients with ``beta_bar``, the sparsity
push ``gamma / sqrt(f)``, clipping at 0 and L2 normalisation, 200 iterations, step 1e-2,
``delta = 1e-6``, 10 block-model restarts of 100 ONMtF iterations, lowest RRE chosen.
Choices of ours: ``r`` starts at ``1/sqrt(f)`` (unit norm, as the issue asks; the authors'
script starts at 1); ``L_m`` is ``KL(P || Q)`` — the given image matrix is the reference
distribution — with the gradient derived for that form (the authors' code differentiates a
``Q log(Q/P)``-like expression); ``M`` is recomputed from the binarised ``F`` as block
densities ``D^-1 F^T A F D^-1`` (the authors load ONMtF's ``M`` from MATLAB); ONMtF
updates F before S (that order kept the objective monotone from random starts in our
trials) and stops at the first update that would raise ``||A - F S F^T||`` (it can creep
up near a partition, because the updates descend the orthogonality Lagrangian); each
restart starts from k-means labels of the spectral embedding (``block_init="spectral"``,
lower RRE than random starts on every graph we tried and better selections on Cora and
Citeseer, worse on BlogCatalog; ``"random"``, the authors' setting, is available); empty
blocks are handled with a pseudo-inverse of ``D``.
"""
from __future__ import annotations

import time
import warnings
from numbers import Integral, Real
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state

from featagg_core.graph.block_model import (
    BlockModel,
    block_fit_quality,
    choose_n_blocks,
    spectral_embedding,
)
from featagg_core.graph.evaluation import known_class_mask
from featagg_core.graph.inputs import (
    BLOCK_INIT,
    NON_NEGATIVE,
    POSITIVE,
    RANDOM_STATE,
    check_adjacency,
    check_node_features,
)
from featagg_core.graph.selection_problem import (
    SelectionProblem,
    gammas_from,
    projected_gradient,
)
from featagg_core.utils.validation import (
    Interval,
    check_int,
    check_param,
    parameter_error,
    validate_params,
)

__all__ = ["BMGUFS", "SelectionFilledWarning", "warmup"]


class SelectionFilledWarning(UserWarning):
    """:meth:`BMGUFS.select` was asked for more features than have a non-zero weight at
    any gamma it could reach, and filled the rest by score (the message says how many)."""


# ---------------------------------------------------------------------------
# BMGUFS
# ---------------------------------------------------------------------------
class BMGUFS(BaseEstimator):
    """Block Model Guided Unsupervised Feature Selection (Bai, Nguyen & Davidson, KDD 2020).

    Parameters
    ----------
    n_blocks : int or None, default None
        Number of blocks k. ``None`` uses the number of distinct classes in ``y`` given to
        :meth:`fit` (the paper's setting); without ``y``, the rule of
        :func:`featagg_core.graph.block_model.choose_n_blocks`: the largest gap between
        consecutive leading eigenvalues of the normalised adjacency (k = 2..20) when that
        gap is clear, else the modularity knee of the spectral partitions (its docstring
        gives the evidence against the eigengap alone, the modularity argmax and the RRE
        elbow); ``n_blocks_rule_`` says which k was chosen and why, ``k_source_`` in one
        word.
    beta_bar : float in [0, 1], default 0.6
        Composition ratio: weight of the image-matrix term ``L_m`` against the
        structural-equivalence term ``L_b`` (each gradient is normalised first).
    gamma : float >= 0, default 2.0
        Sparsity push: ``gamma / sqrt(f)`` is added to every gradient component, so larger
        values zero out more weights (:meth:`select` lowers it when fewer than d stay).
    n_candidates : int, default 10
        Random restarts of the block model; the lowest RRE is used unless ``candidate``.
    max_iter : int, default 200
        Projected-gradient iterations.
    random_state : int or None, default 0
        Seed; candidate ``c`` uses the seed drawn from it at position ``c``.
    learning_rate : float, default 1e-2
        Step size eta.
    delta : float, default 1e-6
        Smoothing added to both image matrices before row normalisation.
    n_iter_block : int, default 100
        ONMtF iterations per candidate.
    candidate : int or None, default None
        Index of the candidate block model to use (None: the lowest RRE).
    block_init : {"spectral", "random"}, default "spectral"
        How each ONMtF restart starts (see :class:`featagg_core.graph.block_model.BlockModel`).

    Attributes
    ----------
    scores_ : ndarray, shape (f,)
        The feature weights r (non-negative, unit L2 norm, many exactly 0).
    history_ : dict of ndarrays
        ``"L_b"``, ``"L_m"``, ``"nnz"``: values at r_0 and after every update.
    block_model_ : BlockModel
        The block model that guided the selection.
    candidates_ : list of BlockModel
        All candidate block models (each with its ``rre_``); ``candidate_rre_`` lists them.
    candidate_index_ : int
        Position of ``block_model_`` in ``candidates_``.
    target_similarity_, induced_similarity_ : ndarray, shape (k, k)
        ``P = rownorm(M + delta)`` and the final ``Q = rownorm(Dbar R Dbar^T + delta)``.
    n_iter_ : int
        Updates performed (fewer than ``max_iter`` only if every weight hit 0).
    n_blocks_ : int, n_blocks_rule_ : str
        The number of blocks used and a sentence saying how it was chosen.
    k_source_ : str
        Where k came from, in one word: ``"given"`` (``n_blocks``), ``"classes"`` (the
        number of classes in ``y``), ``"eigengap"`` or ``"modularity"`` (the no-label
        rule: a clear eigengap, else the modularity knee) or ``"block model"``
        (``block_model=`` / ``candidates=``); None for an old artifact whose sentence
        does not say.
    last_selection_ : dict
        Set by :meth:`select`: ``d``, the ``gamma`` whose weights gave the features,
        their ``n_nonzero``, ``how`` (``"fitted gamma"``, ``"gamma path"`` or ``"filled
        by score"``) and how many were ``filled``.
    fit_quality_ : dict
        ``best_rre``, ``worst_rre``, ``null_rre`` (a random partition of the best model's
        block sizes), ``explained`` (``1 - RRE^2`` of the best), ``null_explained``,
        ``lift`` (their ratio): :func:`featagg_core.graph.block_model.block_fit_quality`.
    fit_warning_ : str or None
        Set (and warned, ``UserWarning``) when every candidate has RRE >= 0.95.
    gamma_ : float, gamma_path_ : list of (gamma, nnz(r))
        The gamma of ``scores_`` and the gammas tried (one entry for :meth:`fit`; the
        walk down the grid for :meth:`fit_gamma_grid`).
    timings_ : dict
        Seconds spent in "block_models", "precompute" and "selection".

    Notes
    -----
    See the module docstring for the objective, its sparse evaluation and which choices
    follow the paper or the authors' code.
    """

    _parameter_constraints: dict = {
        "n_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "beta_bar": [Interval(Real, 0, 1, closed="both")],
        "gamma": NON_NEGATIVE,
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
        "learning_rate": POSITIVE,
        "delta": POSITIVE,
        "n_iter_block": [Interval(Integral, 0, None, closed="left")],
        "candidate": [Interval(Integral, 0, None, closed="left"), None],
        "block_init": BLOCK_INIT,
    }

    def __init__(self, n_blocks=None, beta_bar=0.6, gamma=2.0, n_candidates=10,
                 max_iter=200, random_state=0, learning_rate=1e-2, delta=1e-6,
                 n_iter_block=100, candidate=None, block_init="spectral"):
        self.n_blocks = n_blocks
        self.beta_bar = beta_bar
        self.gamma = gamma
        self.n_candidates = n_candidates
        self.max_iter = max_iter
        self.random_state = random_state
        self.learning_rate = learning_rate
        self.delta = delta
        self.n_iter_block = n_iter_block
        self.candidate = candidate
        self.block_init = block_init

    # ------------------------------------------------------------------
    def _validate_params(self):
        """The declared constraints, then ``candidate < n_candidates``; returns
        ``(beta_bar, gamma, n_candidates, max_iter, learning_rate, delta, n_iter_block)``
        as Python numbers (also called by the run-spec and artifact checks)."""
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        n_cand = int(self.n_candidates)
        if self.candidate is not None and self.candidate >= n_cand:
            raise parameter_error("candidate", f"< n_candidates ({n_cand})", self.candidate)
        return (float(self.beta_bar), float(self.gamma), n_cand, int(self.max_iter),
                float(self.learning_rate), float(self.delta), int(self.n_iter_block))

    def fit_block_models(self, A, y=None, *, progress: Optional[Callable] = None):
        """Fit only the ``n_candidates`` block models (stage 1) and return them.

        Parameters
        ----------
        A : sparse or dense matrix, shape (n, n)
            Symmetric non-negative adjacency matrix.
        y : array, shape (n,), optional
            Node classes; only used for ``n_blocks=None`` (k = number of classes).
        progress : callable(stage, fraction, message), optional
            As in :meth:`fit` (stage ``"block models"``).

        Returns
        -------
        list of BlockModel
            ``n_candidates`` fitted block models, candidate ``c`` seeded by the ``c``-th
            seed drawn from ``random_state``.

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints``, a bad ``A`` or ``y``.
        """
        _, _, n_cand, _, _, _, n_iter_block = self._validate_params()
        A = check_adjacency(A)
        k, _ = self._resolve_k(y, A)
        seeds = check_random_state(self.random_state).randint(0, 2 ** 31 - 1, size=n_cand)
        if progress is not None:
            progress("block models", 0.0, f"spectral embedding of {A.shape[0]:,} nodes"
                     if self.block_init == "spectral" else "block models")
        emb = spectral_embedding(A, k) if self.block_init == "spectral" else None
        out = []
        for c in range(n_cand):
            sub = None
            if progress is not None:
                def sub(fraction, message, c=c):
                    progress("block models", (c + min(float(fraction), 0.99)) / n_cand,
                             f"block model {c + 1}/{n_cand}: {message}")
            out.append(BlockModel(n_blocks=k, n_iter=n_iter_block, random_state=int(seeds[c]),
                                  init=self.block_init).fit(A, _embedding=emb, progress=sub))
            if progress is not None:
                progress("block models", (c + 1) / n_cand,
                         f"block model {c + 1}/{n_cand}: RRE {out[-1].rre_:.4f}")
        return out

    def _resolve_k(self, y, A):
        """``(k, (sentence, source))``: ``n_blocks`` ("given"); else the number of classes
        in ``y`` ("classes", the paper's setting); else the eigengap rule ("eigengap",
        :func:`choose_n_blocks`)."""
        n = A.shape[0]
        if self.n_blocks is not None:
            k = int(self.n_blocks)
            rule = (f"k = {k} blocks (given)", "given")
        elif y is not None:
            yy = np.asarray(y)
            if yy.shape[0] != n:
                raise ValueError(f"y: has {yy.shape[0]} entries but the graph has {n} nodes")
            k = int(np.unique(yy[known_class_mask(yy)]).size)
            rule = (f"k = {k} blocks: the number of node classes", "classes")
        else:
            k, _, sentence = choose_n_blocks(A)
            rule = (sentence, "modularity" if "modularity knee" in sentence else "eigengap")
        if k > n:
            raise parameter_error("n_blocks", f"at most the number of nodes ({n})", k)
        return k, rule

    def fit(self, A, X, y=None, *, block_model: Optional[BlockModel] = None,
            candidates=None, progress: Optional[Callable] = None):
        """Select features of ``X`` guided by a block model of ``A``.

        Parameters
        ----------
        A : sparse or dense (n, n)
            Symmetric non-negative adjacency matrix.
        X : sparse or dense (n, f)
            Non-negative node features (the paper's ``Y``).
        y : array (n,), optional
            Node classes; only used for ``n_blocks=None`` (k = number of classes).
        block_model : fitted BlockModel, optional
            Use this block model instead of fitting candidates (``candidates_`` is then
            ``[block_model]``).
        candidates : list of fitted BlockModel, optional
            Reuse candidates from an earlier fit (e.g. to switch ``candidate`` cheaply).
        progress : callable(stage, fraction, message), optional
            Called while each block model is fitted (at least every ~0.1 s during ONMtF),
            after each one, and every 10 selection iterations or 0.25 s, whichever comes
            first. It may raise (e.g. :class:`featagg_core.utils.cancel.Cancelled`) to stop;
            the exception propagates and the estimator keeps its previous state.

        Returns
        -------
        BMGUFS
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints`` (the message names it),
            ``candidate`` not below the number of candidates, or bad ``A`` / ``X`` / ``y``
            (the message names the matrix).
        """
        beta, gamma, _, max_iter, eta, delta, _ = self._validate_params()
        A, cands, idx, rule, prob, block_s, precompute_s = self._prepare(
            A, X, y, block_model, candidates, progress, delta)
        self._set_selection(prob, beta, gamma, max_iter, eta, progress)
        self.timings_ = {"block_models": block_s, "precompute": precompute_s,
                         "selection": self.timings_["selection"]}
        self._set_block_state(A, cands, idx, rule, prob)
        self.gamma_ = float(gamma)
        self.gamma_path_ = [(float(gamma), self.n_nonzero_)]
        self._keep_path(prob, beta, max_iter, eta, {float(gamma): (self.scores_, self._alive)},
                        gammas_from(gamma)[1:])
        return self

    def _prepare(self, A, X, y, block_model, candidates, progress, delta):
        """What :meth:`fit` and :meth:`fit_gamma_grid` share before the selection.

        Checks ``A`` then ``X``, picks the block model among the candidates and
        precomputes the objective's sparse pieces.

        Returns
        -------
        tuple
            ``(A, cands, idx, rule, prob, block_s, precompute_s)``: the checked adjacency,
            the candidate block models, the chosen one's index and the rule that chose it,
            the :class:`featagg_core.graph.selection_problem.SelectionProblem`, and the seconds of the two stages.
        """
        A = check_adjacency(A)
        Y = check_node_features(X, A.shape[0])
        t0 = time.perf_counter()
        cands, idx, rule = self._candidates(A, y, block_model, candidates, progress)
        block_s = time.perf_counter() - t0
        bm = cands[idx]
        t0 = time.perf_counter()
        if progress is not None:
            progress("selection", 0.0, "precomputing the sparse pieces of the objective")
        prob = SelectionProblem(Y, bm.labels_, bm.M_, delta)
        return A, cands, idx, rule, prob, block_s, time.perf_counter() - t0

    def fit_gamma_grid(self, A, X, d, y=None, *, gammas=None,
                       block_model: Optional[BlockModel] = None, candidates=None,
                       progress: Optional[Callable] = None):
        """:meth:`fit`, then lower gamma until at least ``d`` weights are non-zero.

        Tries ``gammas`` in the given order (default: ``gamma`` itself, then the values
        of :data:`featagg_core.graph.selection_problem.GAMMA_GRID` below it — the paper's grid
        {3, 2, 1}, then 0.5, 0.25, 0) and keeps the first whose ``nnz(r) >= d``: the
        sparsest selection that still has ``d`` features to rank, a rule that needs no
        labels. The block models and the precomputed terms are shared by all gammas.
        ``gamma_`` is the value kept, ``gamma_path_`` the ``(gamma, nnz(r))`` tried. When
        even the last gamma keeps fewer than ``d``, its weights are kept (``select``
        then fills by score and warns). :meth:`select` after a plain :meth:`fit` walks
        the same path, so both give the same ``d`` features.

        Parameters
        ----------
        A, X, y, block_model, candidates, progress :
            As in :meth:`fit` (``progress`` fractions run over the whole grid).
        d : int >= 1
            The number of features that must keep a non-zero weight.
        gammas : iterable of float >= 0, optional
            The gammas to try, in order (default: ``gamma`` and the grid below it).

        Returns
        -------
        BMGUFS
            ``self``, fitted with the first gamma that keeps ``d`` weights (or the last).

        Raises
        ------
        ValueError
            As :meth:`fit`, and for a bad ``d`` or an empty / negative ``gammas``.
        """
        beta, gamma, _, max_iter, eta, delta, _ = self._validate_params()
        d = check_int("d", d, 1)
        if gammas is None:
            grid = gammas_from(gamma)
        else:
            grid = [float(check_param("gammas", g, NON_NEGATIVE)) for g in gammas]
        if not grid:
            raise parameter_error("gammas", "a non-empty list of numbers >= 0", gammas)
        A, cands, idx, rule, prob, block_s, precompute_s = self._prepare(
            A, X, y, block_model, candidates, progress, delta)
        path, selection_s, tried, rest = [], 0.0, {}, []
        for i, g in enumerate(grid):
            sub = None if progress is None else (
                lambda stage, frac, msg, i=i, g=g: progress(
                    stage, (i + frac) / len(grid), f"gamma {g:g}: {msg}"))
            self._set_selection(prob, beta, g, max_iter, eta, sub)
            selection_s += self.timings_["selection"]
            path.append((float(g), self.n_nonzero_))
            tried[float(g)] = (self.scores_, self._alive)
            if self.n_nonzero_ >= d:
                rest = grid[i + 1:]
                break
        self.timings_ = {"block_models": block_s, "precompute": precompute_s,
                         "selection": selection_s}
        self._set_block_state(A, cands, idx, rule, prob)
        self.gamma_ = path[-1][0]
        self.gamma_path_ = path
        self._keep_path(prob, beta, max_iter, eta, tried, rest)
        return self

    def _keep_path(self, prob, beta, max_iter, eta, tried, rest):
        """What :meth:`select` needs to follow the gamma path later: the checked features
        (a reference, not a copy; H is rebuilt when needed, not kept), the selection's
        settings, the gammas still to try below ``gamma_`` and the weights (and
        "held on" counts) of every gamma already fitted."""
        self._path = {"Y": prob.Y, "beta": float(beta), "max_iter": int(max_iter),
                      "eta": float(eta), "delta": float(prob.delta),
                      "below": [float(g) for g in rest], "fits": dict(tried)}

    def _candidates(self, A, y, block_model, candidates, progress):
        """``(candidate block models, index of the one to use, how k was chosen)``."""
        n = A.shape[0]
        if block_model is not None:
            cands = [block_model]
        elif candidates is not None:
            cands = list(candidates)
        else:
            cands = self.fit_block_models(A, y, progress=progress)
        if not cands:
            raise ValueError("candidates: an empty list of block models")
        for bm in cands:
            if not isinstance(bm, BlockModel) or not hasattr(bm, "labels_"):
                raise ValueError("block_model/candidates: expected fitted BlockModel objects")
            if bm.labels_.shape[0] != n:
                raise ValueError(f"block_model: fitted on {bm.labels_.shape[0]} nodes but "
                                 f"the graph has {n}")
        if block_model is not None or candidates is not None:
            rule = (f"k = {cands[0].M_.shape[0]} blocks (from the given block model"
                    + ("s)" if block_model is None else ")"), "block model")
        else:
            rule = self._resolve_k(y, A)[1]
        rre = np.array([bm.rre_ for bm in cands])
        if block_model is not None:
            idx = 0
        elif self.candidate is not None:
            idx = int(self.candidate)
            if idx >= len(cands):
                raise parameter_error("candidate", f"< the number of candidates ({len(cands)})",
                                      idx)
        else:
            idx = int(np.argmin(rre))
        return cands, idx, rule

    def _set_block_state(self, A, cands, idx, rule, prob):
        bm = cands[idx]
        self.block_model_ = bm
        self.candidates_ = cands
        self.candidate_rre_ = np.array([c.rre_ for c in cands])
        self.candidate_index_ = idx
        self.target_similarity_ = prob.P
        self.n_features_in_ = prob.n_features
        self.n_blocks_ = int(bm.M_.shape[0])
        self.n_blocks_rule_, self.k_source_ = rule
        rs = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
        self.fit_quality_, self.fit_warning_ = block_fit_quality(A, cands, int(rs))
        if self.fit_warning_:
            warnings.warn("BMGUFS: " + self.fit_warning_, UserWarning, stacklevel=3)

    def _set_selection(self, prob, beta, gamma, max_iter, eta, progress):
        """The projected-gradient search for r (module docstring) on a precomputed
        problem: sets ``scores_``, ``history_``, ``n_iter_``, ``induced_similarity_``."""
        t0 = time.perf_counter()
        r, self.history_, self.n_iter_, Q, alive = projected_gradient(
            prob, beta, gamma, max_iter, eta, progress, return_alive=True)
        self.scores_ = r
        self.induced_similarity_ = Q
        self._alive = alive
        self.timings_ = {"selection": time.perf_counter() - t0}

    # ------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "scores_"):
            raise NotFittedError("This BMGUFS is not fitted yet: call fit(A, X) first")

    @property
    def n_nonzero_(self) -> int:
        """Number of non-zero feature weights, ``nnz(r)``."""
        self._check_fitted()
        return int(np.count_nonzero(self.scores_))

    def select(self, d, strict: bool = False) -> np.ndarray:
        """Indices of ``d`` features, largest weight first: never fewer than ``d`` without a
        warning.

        When the fitted gamma left at least ``d`` weights non-zero: the top ``d`` by weight
        (ties to the lower index). Otherwise the selection **follows the gamma path**, as
        :meth:`fit_gamma_grid` and the dashboard do: the gammas of
        :data:`featagg_core.graph.selection_problem.GAMMA_GRID` below ``gamma_`` (the
        paper's {3, 2, 1}, then 0.5, 0.25, 0), each a new projected-gradient search on the
        same block model, until one leaves ``d`` non-zero weights; its top ``d`` are
        returned, so ``fit(A, X).select(d)`` equals ``fit_gamma_grid(A, X, d).select(d)``.
        ``last_selection_`` says which gamma they came from. Weights of gammas already
        searched are kept, so asking again costs nothing.

        When even the last gamma keeps fewer than ``d`` (or the model was loaded from an
        artifact, which holds no training features to search with, or ``d`` is larger than
        the number of features), the non-zero ones come first by weight and the rest are
        **filled by score** — the zero-weight features that kept a non-zero weight for the
        most updates of that search first, then the lower index — and a
        :class:`SelectionFilledWarning` (a ``UserWarning``; the dashboard shows it) says
        how many were filled.

        Parameters
        ----------
        d : int >= 1
            Number of features wanted.
        strict : bool, default=False
            Raise ``ValueError`` instead of filling by score.

        Returns
        -------
        ndarray of int64
            ``min(d, n_features_in_)`` feature indices, in the order above.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            For a bad ``d``, or with ``strict=True`` when the selection would be filled.
        """
        self._check_fitted()
        d = check_int("d", d, 1)
        r, alive, gamma, how = self._weights_for(d)
        f = r.size
        nnz = int(np.count_nonzero(r))
        order = np.lexsort((np.arange(f), -alive, -r))
        take = min(d, f)
        self.last_selection_ = {"d": int(d), "gamma": float(gamma), "n_nonzero": nnz,
                                "how": how if nnz >= d else "filled by score",
                                "filled": max(0, take - nnz)}
        if nnz < d:
            fitted = getattr(self, "gamma_", self.gamma)
            why = ("the model was loaded from an artifact, which keeps no training features "
                   "to lower gamma with" if how == "no path" else
                   f"even at gamma {gamma:g}, the lowest on the path from {fitted:g}")
            msg = (f"d: asked for {d} features but only {nnz} of the {f} BMGUFS weights are "
                   f"non-zero (nnz(r) < d; {why})")
            if strict:
                raise ValueError(msg)
            extra = (f"; the {take - nnz} others are the zero-weight features that held a "
                     "non-zero weight longest in the search" if take > nnz else "")
            if d > f:
                extra += f"; there are only {f} features"
            warnings.warn(msg + f"; returning {take} features{extra}",
                          SelectionFilledWarning, stacklevel=2)
        return order[:take].astype(np.int64)

    def _weights_for(self, d):
        """``(r, held-on counts, gamma, how)``: the fitted weights when they keep ``d``
        non-zero, else the first gamma below ``gamma_`` on the path that does (searched now
        and remembered), else the last one reached (``how`` says which)."""
        r = self.scores_
        alive = getattr(self, "_alive", None)
        if alive is None:
            alive = np.zeros(r.size, dtype=np.int64)
        gamma = float(getattr(self, "gamma_", self.gamma))
        if int(np.count_nonzero(r)) >= d:
            return r, alive, gamma, "fitted gamma"
        path = getattr(self, "_path", None)
        if path is None:
            return r, alive, gamma, "no path"
        prob = None
        for g in path["below"]:
            if g not in path["fits"]:
                if prob is None:
                    bm = self.block_model_
                    prob = SelectionProblem(path["Y"], bm.labels_, bm.M_, path["delta"])
                r_g, _, _, _, a_g = projected_gradient(prob, path["beta"], g,
                                                       path["max_iter"], path["eta"],
                                                       return_alive=True)
                path["fits"][g] = (r_g, a_g)
            r, alive = path["fits"][g]
            gamma = g
            if int(np.count_nonzero(r)) >= d:
                return r, alive, gamma, "gamma path"
        return r, alive, gamma, "end of the path"

    def transform(self, X, d, strict: bool = False):
        """The columns of ``X`` selected by :meth:`select` (sparse stays sparse).

        Parameters
        ----------
        X : sparse or dense matrix, shape (n, n_features_in_)
            Node features.
        d, strict :
            As in :meth:`select`.

        Returns
        -------
        scipy.sparse.csr_matrix or ndarray, shape (n, min(d, n_features_in_))
            The selected columns, in :meth:`select`'s order.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            As :meth:`select`, and for ``X`` with another number of features.
        """
        idx = self.select(d, strict=strict)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X: has {X.shape[1]} features, BMGUFS was fitted on "
                             f"{self.n_features_in_}")
        if sp.issparse(X):
            return sp.csr_matrix(X)[:, idx]
        return np.asarray(X)[:, idx]

    # artifacts protocol -------------------------------------------------------
    def _artifact_state(self):
        """``(meta, arrays)`` of the fitted selector: the selection, the candidates' own
        states prefixed ``cand<c>_``."""
        self._check_fitted()
        meta = {"n_iter_": int(self.n_iter_), "candidate_index_": int(self.candidate_index_),
                "n_features_in_": int(self.n_features_in_),
                "timings_": {k: float(v) for k, v in self.timings_.items()},
                "n_candidates_fitted": len(self.candidates_),
                "candidates": [bm.get_params() for bm in self.candidates_],
                "candidate_meta": [bm._artifact_state()[0] for bm in self.candidates_]}
        meta.update({"n_blocks_": int(self.n_blocks_), "n_blocks_rule_": self.n_blocks_rule_,
                     "gamma_": float(self.gamma_),
                     "gamma_path_": [[float(g), int(z)] for g, z in self.gamma_path_],
                     "fit_quality_": {k: float(v) for k, v in self.fit_quality_.items()},
                     "fit_warning_": self.fit_warning_})
        arrays = {"scores_": self.scores_, "target_similarity_": self.target_similarity_,
                  "induced_similarity_": self.induced_similarity_,
                  "candidate_rre_": self.candidate_rre_}
        for key, val in self.history_.items():
            arrays[f"history_{key}"] = val
        for c, bm in enumerate(self.candidates_):
            for name, arr in bm._artifact_state()[1].items():
                arrays[f"cand{c}_{name}"] = arr
        return meta, arrays

    @classmethod
    def _from_artifact_state(cls, params, meta, arrays):
        """A fitted BMGUFS from :meth:`_artifact_state`'s output (artifacts written before
        ``n_blocks_``, ``gamma_``, ``fit_quality_`` ... existed get what can be rebuilt)."""
        obj = cls(**params)
        obj.scores_ = np.asarray(arrays["scores_"], dtype=np.float64)
        obj.history_ = {key: np.asarray(arrays[f"history_{key}"])
                        for key in ("L_b", "L_m", "nnz")}
        obj.n_iter_ = int(meta["n_iter_"])
        obj.n_features_in_ = int(meta["n_features_in_"])
        obj.timings_ = dict(meta.get("timings_", {}))
        obj.target_similarity_ = np.asarray(arrays["target_similarity_"])
        obj.induced_similarity_ = np.asarray(arrays["induced_similarity_"])
        obj.candidate_rre_ = np.asarray(arrays["candidate_rre_"])
        cands = []
        for c in range(int(meta["n_candidates_fitted"])):
            sub = {name[len(f"cand{c}_"):]: arr for name, arr in arrays.items()
                   if name.startswith(f"cand{c}_")}
            cands.append(BlockModel._from_artifact_state(meta["candidates"][c],
                                                         meta["candidate_meta"][c], sub))
        obj.candidates_ = cands
        obj.candidate_index_ = int(meta["candidate_index_"])
        obj.block_model_ = cands[obj.candidate_index_]
        # artifacts written before these attributes existed get what can be rebuilt
        obj.n_blocks_ = int(meta.get("n_blocks_", obj.block_model_.M_.shape[0]))
        obj.n_blocks_rule_ = meta.get("n_blocks_rule_", f"k = {obj.n_blocks_} blocks")
        obj.k_source_ = _k_source_of(obj.n_blocks_rule_)
        obj.gamma_ = float(meta.get("gamma_", obj.gamma))
        obj.gamma_path_ = [(float(g), int(z)) for g, z in
                           meta.get("gamma_path_", [[obj.gamma_, int(np.count_nonzero(
                               obj.scores_))]])]
        obj.fit_quality_ = dict(meta.get("fit_quality_", {}))
        obj.fit_warning_ = meta.get("fit_warning_")
        return obj


def _k_source_of(rule: str):
    """``k_source_`` read back from an ``n_blocks_rule_`` sentence (artifacts keep the
    sentence only); None when it does not say."""
    for word, source in (("(given)", "given"), ("node classes", "classes"),
                         ("modularity knee", "modularity"), ("eigengap", "eigengap"),
                         ("given block model", "block model")):
        if word in rule:
            return source
    return None


def warmup() -> None:
    """Compile the numba kernels on a tiny graph (the dashboard calls this at start-up)."""
    rng = np.random.RandomState(0)
    n, f = 12, 5
    labels = np.repeat([0, 1, 2], 4)
    P = np.where(labels[:, None] == labels[None, :], 0.9, 0.1)
    up = np.triu(rng.random_sample((n, n)) < P, 1)
    A = sp.csr_matrix((up | up.T).astype(np.float64))
    Xd = rng.random_sample((n, f)) * (rng.random_sample((n, f)) < 0.6)
    Xd[0, 0] = 1.0
    X = sp.csr_matrix(Xd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)        # tiny graphs fit poorly
        BMGUFS(n_blocks=3, n_candidates=1, max_iter=2, n_iter_block=2).fit(A, X)  # dense H
        X_sparse_h = sp.identity(n, format="csr")[:, :f]                          # sparse H
        BMGUFS(n_blocks=3, n_candidates=1, max_iter=2, n_iter_block=2).fit(A, X_sparse_h)
    from featagg_core._kernels.bmgufs import quad_diag_csr
    quad_diag_csr(A.indptr, A.indices, A.data, X.indptr, X.indices, X.data, f)
