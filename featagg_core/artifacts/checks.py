"""Full validation of an artifact's state before any estimator is rebuilt from it.

A kernel trusts its arrays: a cluster id beyond ``n_clusters``, a tree child index outside
the tree or a csr ``indptr`` that runs past its ``indices`` is an out-of-bounds read or
write in compiled code, i.e. a crashed server. So :func:`validate_state` checks, for the
class named in the manifest, **everything** a kernel or a method will index with:

* every ``params`` field against the constructor's parameter set (no field missing, none
  unknown) and its declared type and range, then the estimator's own parameter check
  when it has one (``_check_params`` / ``_validate`` / ``_validate_params``); a
  constructor parameter added to an estimator after its checks were written must be a
  plain JSON scalar (it is declared here as soon as a loaded model uses it);
* every ``meta`` field against its declared type and range (unknown fields refused);
* every array's presence, dtype kind, shape and value range against the others (cluster
  ids < n_clusters, tree parents before children and child indices inside the tree,
  permutations, csr ``indptr`` monotone from 0 to nnz and ``indices`` < the column
  count, finite values, counts that equal the counts they summarise), and that no array
  is left unclaimed;
* the class against the structure it must have (a one-vs-all "tree" is one root with
  every label as a child; a KTXMLC model has ``n_trees`` trees whose nodes have at most
  ``n_clusters`` cluster children).

The checks are declared here, one function per class name registered with
:func:`checks_for` (the estimator modules belong to other people; this keeps the loader's
safety in one reviewed place). The label-tree classifiers' checks (KTXMLC, OneVsAll,
DefragKTXMLC) are in ``_artifact_checks_trees`` and the Pipeline / FeatureClusters /
FeatureRanking checks in ``_artifact_checks_pipeline``; this module imports both at its end,
which registers them. :func:`validate_state` refuses a class that has no
registered checks, so a class added to ``ARTIFACT_CLASSES`` cannot be loaded until its
checks are written. Every failure is an ``ArtifactError`` naming the member (``meta``,
``params`` or ``arrays/<name>.npy``) and the field. No module-level mutable state beyond
the registry filled at import time.
"""
from __future__ import annotations

import inspect
import math
from importlib import import_module
from typing import Callable, Dict, NoReturn, Optional, Sequence

import numpy as np

INT32_MAX = 2**31 - 1
_MAX_TREES = 10_000

#: class name -> check function; filled once at import by @checks_for below
_CHECKS: Dict[str, Callable[["StateChecker"], None]] = {}


def checks_for(name: str):
    def register(fn):
        _CHECKS[name] = fn
        return fn
    return register


def has_checks(name: str) -> bool:
    return name in _CHECKS


class StateChecker:
    """Typed access to (params, meta, arrays) of one artifact (or one member of a
    composite artifact, ``prefix`` naming it); every accessor validates and records what
    was consumed, :meth:`finish` refuses anything left over."""

    def __init__(self, cls_name: str, params: dict, meta: dict, arrays: Dict[str, np.ndarray],
                 where: str, error, prefix: str = "", label: str = ""):
        self.cls_name = cls_name
        self.params, self.meta, self.arrays = params, meta, arrays
        self.where, self.error, self.prefix = where, error, prefix
        self.label = label or cls_name
        self._p, self._m, self._a = set(), set(), set()
        if not isinstance(params, dict):
            self.fail("params", "is not an object")
        if not isinstance(meta, dict):
            self.fail("meta", "is not an object")

    # -- errors
    def fail(self, field: str, message: str) -> NoReturn:
        raise self.error(f"{self.where}: {self.label} {field}: {message}")

    def _pname(self, key):
        return f"params field {key!r}"

    def _mname(self, key):
        return f"meta field {key!r}"

    def aname(self, key):
        return f"arrays/{self.prefix}{key}.npy"

    # -- scalars
    def _get(self, store, used, key, label, optional=False, default=None):
        if key not in store:
            if optional:
                used.add(key)
                return default
            self.fail(label, "is missing")
        used.add(key)
        return store[key]

    def _int(self, v, label, lo, hi, none):
        if v is None and none:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(label, f"must be an integer, got {_short(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.fail(label, f"= {v} is out of range [{lo}, {hi}]")
        return int(v)

    def _float(self, v, label, lo, hi, none, lo_open=False, finite=True):
        if v is None and none:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(label, f"must be a number, got {_short(v)}")
        v = float(v)
        if finite and not math.isfinite(v):
            self.fail(label, f"must be finite, got {v}")
        if (lo is not None and (v < lo or (lo_open and v == lo))) or (hi is not None and v > hi):
            self.fail(label, f"= {v} is out of range {'(' if lo_open else '['}{lo}, {hi}]")
        return v

    def _choice(self, v, label, choices):
        if not any(v is c or (type(v) is type(c) and v == c) for c in choices):
            self.fail(label, f"must be one of {list(choices)}, got {_short(v)}")
        return v

    def p_int(self, key, lo=None, hi=INT32_MAX, none=False):
        return self._int(self._get(self.params, self._p, key, self._pname(key)),
                         self._pname(key), lo, hi, none)

    def p_float(self, key, lo=None, hi=None, none=False, lo_open=False):
        return self._float(self._get(self.params, self._p, key, self._pname(key)),
                           self._pname(key), lo, hi, none, lo_open)

    def p_choice(self, key, choices):
        return self._choice(self._get(self.params, self._p, key, self._pname(key)),
                            self._pname(key), choices)

    def p_bool(self, key, none=False):
        return self.p_choice(key, (True, False, None) if none else (True, False))

    def p_any(self, key):
        return self._get(self.params, self._p, key, self._pname(key))

    def has_param(self, key) -> bool:
        """True when ``key`` is in params (a parameter only some versions of a class have:
        check it when present, so that it is never left unchecked)."""
        return key in self.params

    def m_int(self, key, lo=None, hi=INT32_MAX, none=False, optional=False):
        v = self._get(self.meta, self._m, key, self._mname(key), optional)
        return None if (optional and key not in self.meta) else \
            self._int(v, self._mname(key), lo, hi, none)

    def m_float(self, key, lo=None, hi=None, none=False, optional=False, finite=True):
        v = self._get(self.meta, self._m, key, self._mname(key), optional)
        return None if (optional and key not in self.meta) else \
            self._float(v, self._mname(key), lo, hi, none, finite=finite)

    def m_choice(self, key, choices):
        return self._choice(self._get(self.meta, self._m, key, self._mname(key)),
                            self._mname(key), choices)

    def m_any(self, key, optional=False):
        return self._get(self.meta, self._m, key, self._mname(key), optional)

    def m_list(self, key, length=None):
        v = self._get(self.meta, self._m, key, self._mname(key))
        if not isinstance(v, list):
            self.fail(self._mname(key), f"must be a list, got {_short(v)}")
        if length is not None and len(v) != length:
            self.fail(self._mname(key), f"has {len(v)} entries, expected {length}")
        return v

    # -- arrays
    def has(self, key) -> bool:
        return (self.prefix + key) in self.arrays

    def arr(self, key, kind: str, shape: Sequence[Optional[int]], *, lo=None, hi=None,
            finite=True, rule: str = "") -> np.ndarray:
        """Array ``key``: dtype kind in ``kind`` ("i" = any integer, "f" = float), the given
        shape (None = any length on that axis), values in [lo, hi] and finite; ``rule``
        says in the message where the bounds come from."""
        full = self.prefix + key
        label = self.aname(key)
        if full not in self.arrays:
            self.fail(label, "is missing")
        self._a.add(full)
        a = self.arrays[full]
        ok_kind = {"i": "iu", "f": "f", "n": "iuf"}[kind]
        if a.dtype.kind not in ok_kind:
            self.fail(label, f"has dtype {a.dtype}, expected {'an integer' if kind == 'i' else 'a float'} array")
        if a.ndim != len(shape) or any(s is not None and a.shape[i] != s
                                       for i, s in enumerate(shape)):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            self.fail(label, f"has shape {a.shape}, expected {want}")
        if a.size:
            if a.dtype.kind == "f" and finite and not np.isfinite(a).all():
                self.fail(label, "holds NaN or infinite values")
            if lo is not None or hi is not None:
                mn, mx = a.min(), a.max()
                if (lo is not None and mn < lo) or (hi is not None and mx > hi):
                    self.fail(label, f"holds values in [{_num(mn)}, {_num(mx)}], expected "
                                     f"[{lo}, {hi}]" + (f" ({rule})" if rule else ""))
        return a

    def permutation(self, key, n: int, shape=None) -> np.ndarray:
        a = self.arr(key, "i", shape or (n,), lo=0, hi=max(n - 1, 0))
        rows = a.reshape(-1, n) if n else a.reshape(-1, 0)
        for r in rows:
            if np.bincount(r, minlength=n).max(initial=1) != 1:
                self.fail(self.aname(key), f"is not a permutation of 0..{n - 1}")
        return a

    def csr(self, data_key, indices_key, indptr_key, shape, *, finite=True) -> None:
        """The parts of a csr matrix of ``shape``: indptr n+1 non-decreasing from 0 to nnz,
        indices in [0, n_cols), data finite."""
        n, m = shape
        ptr = self.arr(indptr_key, "i", (n + 1,))
        nnz = int(ptr[-1]) if ptr.size else 0
        if ptr[0] != 0 or (n and np.any(np.diff(ptr.astype(np.int64)) < 0)):
            self.fail(self.aname(indptr_key), "is not non-decreasing from 0")
        self.arr(indices_key, "i", (nnz,), lo=0, hi=m - 1 if m else -1,
                 rule=f"column indices of a matrix with {m} columns")
        self.arr(data_key, "f", (nnz,), finite=finite)

    def sub(self, cls_name: str, params, meta, prefix: str, label: str) -> "StateChecker":
        """A checker for a member of a composite artifact (arrays prefixed ``prefix``)."""
        sub = StateChecker(cls_name, params, meta, self.arrays, self.where, self.error,
                           prefix=self.prefix + prefix, label=label)
        run_checks(sub)
        self._a |= sub._a
        return sub

    def finish(self) -> None:
        ctor = set(_ctor_params(self.cls_name))
        for key in self.params:
            if key in self._p:
                continue
            if key not in ctor:
                self.fail(self._pname(key), "is not a parameter of this class")
            # a constructor parameter these checks do not declare (added to the estimator
            # since): only a plain JSON scalar, then the estimator's own check; nothing a
            # loaded model indexes with may be left to this rule
            v = self.params[key]
            if not (v is None or isinstance(v, (bool, str)) or
                    (isinstance(v, (int, float)) and math.isfinite(v) and abs(v) < 2**63)) \
                    or (isinstance(v, str) and len(v) > 100):
                self.fail(self._pname(key), f"must be a number, string, bool or null, got "
                                            f"{_short(v)}")
        for key in self.meta:
            if key not in self._m:
                self.fail(self._mname(key), "is unexpected")
        if not self.prefix:
            left = sorted(k for k in self.arrays if k not in self._a)
            if left:
                self.fail(f"arrays/{left[0]}.npy", "is not part of this class's state")


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _num(v):
    return v.item() if hasattr(v, "item") else v


def run_checks(c: StateChecker) -> None:
    fn = _CHECKS.get(c.cls_name)
    if fn is None:
        c.fail("class", "has no declared artifact checks, so it cannot be loaded")
    _check_param_names(c)
    fn(c)
    c.finish()
    _estimator_param_check(c)


def validate_state(cls_name: str, params: dict, meta: dict, arrays: Dict[str, np.ndarray],
                   where: str, error) -> None:
    """Raise ``error`` (ArtifactError) unless (params, meta, arrays) is a consistent state of
    class ``cls_name`` that every method of the rebuilt estimator can use safely."""
    run_checks(StateChecker(cls_name, params, meta, arrays, where, error))


def _cls(name: str):
    """The class named ``name``: one of the artifact table, or a step class that only lives
    inside a Pipeline artifact (``featagg_core.runs.pipeline._LOCAL_CLASSES``)."""
    from featagg_core.artifacts.store import ARTIFACT_CLASSES
    if name in ARTIFACT_CLASSES:
        return getattr(import_module(ARTIFACT_CLASSES[name]), name)
    try:
        local = getattr(import_module("featagg_core.runs.pipeline"), "_LOCAL_CLASSES", {})
    except ImportError:
        local = {}
    return local[name]


def _ctor_params(cls_name: str) -> list:
    """The parameter names ``get_params`` reports (a scikit-learn estimator's constructor
    arguments; a Pipeline's ``spec``)."""
    cls = _cls(cls_name)
    try:
        return list(cls().get_params(deep=False))
    except Exception:  # noqa: BLE001 - a constructor that needs arguments
        return [p for p in inspect.signature(cls.__init__).parameters
                if p != "self" and inspect.signature(cls.__init__).parameters[p].kind
                not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]


def _check_param_names(c: StateChecker) -> None:
    """params must name exactly the constructor's parameters (so a class name edited to a
    sibling class with a subset of the parameters is caught)."""
    for p in _ctor_params(c.cls_name):
        if p not in c.params:
            c.fail(c._pname(p), "is missing (it is a parameter of this class)")


def _estimator_param_check(c: StateChecker) -> None:
    """The estimator's own parameter validation, when it has one, on an instance built
    from the (already type-checked) params."""
    cls = _cls(c.cls_name)
    params = dict(c.params)
    if c.cls_name == "Fiat":
        params["defrag"] = None
    try:
        obj = cls(**params)
        for method in ("_check_params", "_validate", "_validate_params"):
            fn = getattr(cls, method, None)       # featagg's own, not scikit-learn's
            if fn is not None and getattr(fn, "__module__", "").startswith("featagg_core"):
                getattr(obj, method)()
    except Exception as exc:  # noqa: BLE001 - any refusal is an invalid artifact
        c.fail("params", f"refused by {c.cls_name}'s own check ({exc})")


# ============================================================================ Defrag
@checks_for("Defrag")
def _defrag(c: StateChecker) -> None:
    d0 = c.p_int("d0", 1)
    c.p_choice("representation", ("XY", "X"))
    c.p_int("random_state", 0, 2**63 - 1)
    c.p_float("sample_points", 0.0, 1.0, lo_open=True)
    c.p_float("sample_labels", 0.0, 1.0, lo_open=True)
    c.p_float("prune_threshold", 0.0, 1.0)
    c.p_float("eps", 0.0)
    c.p_int("max_iter", 1)
    c.p_choice("aggregation", ("sum", "avg"))
    d = c.m_int("n_features_in_", 1)
    K = c.m_int("n_clusters_", 1, d)
    c.m_float("clustering_error_", 0.0)
    c.m_int("n_iter_", 0, 2**62)
    labels = c.arr("labels_", "i", (d,), lo=0, hi=K - 1,
                   rule=f"cluster ids below meta n_clusters_ = {K}")
    sizes = c.arr("cluster_sizes_", "i", (K,), lo=1, hi=d)
    zero = c.arr("zero_features_", "i", (None,), lo=0, hi=d - 1)
    if zero.size > 1 and np.any(np.diff(zero) <= 0):
        c.fail(c.aname("zero_features_"), "is not strictly increasing")
    tree = _check_binary_tree(c, d, d0)
    leaves = tree["leaves"]
    if leaves.size != K:
        c.fail(c._mname("n_clusters_"), f"= {K} but the tree has {leaves.size} leaves")
    if not np.array_equal(sizes, tree["n_members"][leaves]):
        c.fail(c.aname("cluster_sizes_"), "does not match the sizes of the tree's leaves")
    expect = np.repeat(np.arange(K), tree["n_members"][leaves])
    if not np.array_equal(labels[tree["order"]], expect):
        c.fail(c.aname("labels_"), "does not match the clusters of the tree's leaves")


def _check_binary_tree(c: StateChecker, d: int, d0: int) -> dict:
    """DefragTree arrays: node 0 the root, parents before children, each inner node with a
    left and a right child splitting its contiguous range of ``order``, leaves numbered
    0..K-1 left to right, ``order`` a permutation of the d features."""
    parent = c.arr("tree_parent", "i", (None,), lo=-1)
    N = parent.shape[0]
    if N < 1:
        c.fail(c.aname("tree_parent"), "is empty (a tree has at least its root)")
    ids = np.arange(N)
    left = c.arr("tree_left", "i", (N,), lo=-1, hi=N - 1,
                 rule=f"child node ids inside the tree of {N} nodes, -1 at leaves")
    right = c.arr("tree_right", "i", (N,), lo=-1, hi=N - 1,
                  rule=f"child node ids inside the tree of {N} nodes, -1 at leaves")
    depth = c.arr("tree_depth", "i", (N,), lo=0, hi=N)
    start = c.arr("tree_start", "i", (N,), lo=0, hi=d)
    size = c.arr("tree_n_members", "i", (N,), lo=1, hi=d)
    c.arr("tree_n_iter", "i", (N,), lo=0)
    cluster = c.arr("tree_cluster", "i", (N,), lo=-1, hi=N - 1)
    order = c.permutation("tree_order", d)
    if parent[0] != -1 or depth[0] != 0 or start[0] != 0 or size[0] != d:
        c.fail(c.aname("tree_parent"), "node 0 is not a root spanning every feature")
    if N > 1:
        pv = parent[1:]
        if np.any(pv < 0) or np.any(pv >= ids[1:]):
            c.fail(c.aname("tree_parent"), "a node's parent does not come before it")
    inner = left >= 0
    if np.any(inner != (right >= 0)):
        c.fail(c.aname("tree_right"), "a node has exactly one child")
    vi = ids[inner]
    li, ri = left[inner], right[inner]
    if np.any(li <= vi) or np.any(ri <= vi) or np.any(li == ri):
        c.fail(c.aname("tree_left"), "a child does not come after its parent")
    if np.any(parent[li] != vi) or np.any(parent[ri] != vi):
        c.fail(c.aname("tree_parent"), "does not agree with tree_left/tree_right")
    n_child = np.bincount(parent[1:], minlength=N) if N > 1 else np.zeros(N, np.int64)
    if np.any(n_child != 2 * inner):
        c.fail(c.aname("tree_parent"), "a node is the child of no one or of two nodes")
    if N > 1 and np.any(depth[1:] != depth[parent[1:]] + 1):
        c.fail(c.aname("tree_depth"), "is not the parent's depth + 1")
    if np.any(start[li] != start[vi]) or np.any(size[li] + size[ri] != size[vi]) \
            or np.any(start[ri] != start[vi] + size[li]):
        c.fail(c.aname("tree_start"), "a node's children do not split its feature range")
    if np.any(size[vi] <= d0):
        c.fail(c.aname("tree_n_members"), f"a node of at most d0 = {d0} features is split")
    if np.any(start + size > d):
        c.fail(c.aname("tree_start"), "a node's range runs past the features")
    leaf = ids[~inner]
    if np.any(cluster[inner] != -1) or np.any(cluster[leaf] < 0):
        c.fail(c.aname("tree_cluster"), "must be -1 exactly at the inner nodes")
    leaves = leaf[np.argsort(start[leaf], kind="stable")]
    if not np.array_equal(cluster[leaves], np.arange(leaves.size)):
        c.fail(c.aname("tree_cluster"), "leaves are not numbered 0..K-1 from left to right")
    return {"leaves": leaves, "n_members": size, "order": order}


# ============================================================================ FIAT / REFRAG
@checks_for("Fiat")
def _fiat(c: StateChecker) -> None:
    from featagg_core.agglomeration.fiat import NORMALIZATIONS
    d = c.m_int("n_features", 1)
    K = c.m_int("n_clusters", 1, d)
    _clustering_param(c, d, K)
    c.p_choice("normalization", NORMALIZATIONS)
    c.p_float("mix", 0.0)
    c.p_float("min_weight", 0.0)
    c.arr("labels", "i", (d,), lo=0, hi=K - 1, rule=f"cluster ids below meta n_clusters = {K}")
    c.csr("C_data", "C_indices", "C_indptr", (d, d))
    c.csr("T_data", "T_indices", "T_indptr", (d, d))


def _clustering_param(c: StateChecker, d: int, K: int) -> None:
    """``defrag`` is reported as None (a Defrag object) or as the list of cluster ids."""
    v = c.p_any("defrag")
    if v is None:
        return
    if not isinstance(v, list) or len(v) != d or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < K for x in v):
        c.fail(c._pname("defrag"), f"must be None or {d} cluster ids in [0, {K})")


@checks_for("Refrag")
def _refrag(c: StateChecker) -> None:
    from featagg_core.agglomeration.fiat import NORMALIZATIONS
    from featagg_core.agglomeration.refrag import SCORE_NORMALIZATIONS
    c.p_float("alpha", 0.0, 1.0)
    c.p_float("gamma", 0.0)
    c.p_int("shortlist_size", 1)
    c.p_int("n_prototype_candidates", 0)
    c.p_choice("normalization", NORMALIZATIONS)
    c.p_float("prune_threshold", 0.0, 1.0)
    c.p_choice("score_normalization", tuple(SCORE_NORMALIZATIONS))
    c.p_bool("impute_query")
    c.p_float("propensity_exponent", 0.0)
    c.p_float("propensity_A", 0.0)
    c.p_float("propensity_B", 0.0)
    d = c.m_int("n_features", 1)
    L = c.m_int("n_labels", 1)
    K = c.m_int("n_clusters", 1, d)
    c.arr("labels", "i", (d,), lo=0, hi=K - 1, rule=f"cluster ids below meta n_clusters = {K}")
    c.arr("label_frequency", "i", (L,), lo=0)
    c.arr("inv_propensity", "f", (L,), lo=0.0)
    c.csr("P_data", "P_indices", "P_indptr", (L, d))
    c.csr("T_data", "T_indices", "T_indptr", (d, d))


# ============================================================================ BlockModel, BMGUFS
@checks_for("BlockModel")
def _block_model(c: StateChecker) -> None:
    k = c.p_int("n_blocks", 1)
    c.p_int("n_iter", 0)
    c.p_int("random_state", 0, 2**63 - 1, none=True)
    c.p_choice("init", ("random", "spectral"))
    c.m_float("rre_", 0.0)
    n = c.m_int("n_nodes_", 1)
    n_iter = c.m_int("n_iter_", 0, 2**31)
    if k > n:
        c.fail(c._pname("n_blocks"), f"= {k} blocks for {n} nodes")
    labels = c.arr("labels_", "i", (n,), lo=0, hi=k - 1)
    c.arr("M_", "f", (k, k))
    sizes = c.arr("block_sizes_", "f", (k,), lo=0)
    c.arr("F_", "f", (n, k))
    c.arr("S_", "f", (k, k))
    c.arr("objective_", "f", (n_iter + 1,), finite=False)
    if not np.array_equal(sizes, np.bincount(labels, minlength=k).astype(sizes.dtype)):
        c.fail(c.aname("block_sizes_"), "does not count the nodes of each block")


@checks_for("BMGUFS")
def _bmgufs(c: StateChecker) -> None:
    fq = c.m_any("fit_quality_", optional=True)   # informational: a few named floats
    if fq is not None and not (isinstance(fq, dict) and len(fq) <= 64 and all(
            isinstance(k, str) and len(k) <= 100 and isinstance(v, (int, float))
            and not isinstance(v, bool) for k, v in fq.items())):
        c.fail(c._mname("fit_quality_"), "must map names to numbers")
    fw = c.m_any("fit_warning_", optional=True)
    if fw is not None and not (isinstance(fw, str) and len(fw) <= 2000):
        c.fail(c._mname("fit_warning_"), "must be a short string or null")
    # the fitted k and gamma (automatic choices since); informational for the views
    c.m_int("n_blocks_", 1, 100_000, optional=True)
    rule = c.m_any("n_blocks_rule_", optional=True)
    if rule is not None and not (isinstance(rule, str) and len(rule) <= 2000):
        c.fail(c._mname("n_blocks_rule_"), "must be a short string")
    g = c.m_any("gamma_", optional=True)
    if g is not None and not (isinstance(g, (int, float)) and not isinstance(g, bool)
                              and math.isfinite(g) and g >= 0):
        c.fail(c._mname("gamma_"), "must be a finite number >= 0")
    path = c.m_any("gamma_path_", optional=True)
    if path is not None and not (isinstance(path, list) and len(path) <= 10_000 and all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], (int, float))
            and not isinstance(e[0], bool) and math.isfinite(e[0])
            and isinstance(e[1], int) and not isinstance(e[1], bool) and e[1] >= 0
            for e in path)):
        c.fail(c._mname("gamma_path_"), "must list [gamma, nnz] pairs")
    c.p_int("n_blocks", 1, none=True)
    c.p_float("beta_bar", 0.0, 1.0)
    c.p_float("gamma", 0.0)
    c.p_int("n_candidates", 1, 10_000)
    max_iter = c.p_int("max_iter", 0)
    c.p_int("random_state", 0, 2**63 - 1, none=True)
    c.p_float("learning_rate", 0.0, lo_open=True)
    c.p_float("delta", 0.0, lo_open=True)
    c.p_int("n_iter_block", 0)
    c.p_int("candidate", 0, none=True)
    c.p_choice("block_init", ("random", "spectral"))
    n_iter = c.m_int("n_iter_", 0, max_iter)
    f = c.m_int("n_features_in_", 1)
    timings = c.m_any("timings_", optional=True)
    if timings is not None and (not isinstance(timings, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in timings.values())):
        c.fail(c._mname("timings_"), "must map names to seconds")
    n_cand = c.m_int("n_candidates_fitted", 1, 10_000)
    idx = c.m_int("candidate_index_", 0, n_cand - 1)
    cand_params = c.m_list("candidates", n_cand)
    cand_meta = c.m_list("candidate_meta", n_cand)
    c.arr("scores_", "f", (f,), lo=0.0)
    c.arr("candidate_rre_", "f", (n_cand,), lo=0.0)
    h = n_iter + 1
    for key in ("history_L_b", "history_L_m"):
        a = c.arr(key, "f", (None,), finite=False)
        if not 1 <= a.shape[0] <= max_iter + 1:
            c.fail(c.aname(key), f"has {a.shape[0]} entries for {h} iterations")
    c.arr("history_nnz", "i", (None,), lo=0, hi=f)
    nodes = None
    for j in range(n_cand):
        bm = c.sub("BlockModel", cand_params[j], cand_meta[j], f"cand{j}_",
                   f"BMGUFS candidate {j}")
        n = bm.meta["n_nodes_"]
        if nodes is not None and n != nodes:
            c.fail(c._mname("candidate_meta"), f"candidate {j} has {n} nodes, candidate 0 "
                   f"{nodes}")
        nodes = n
    k = int(cand_params[idx]["n_blocks"])
    c.arr("target_similarity_", "f", (k, k))
    c.arr("induced_similarity_", "f", (k, k))


# ============================================================================ vocabulary
@checks_for("VocabularyCompressor")
def _vocabulary(c: StateChecker) -> None:
    import pandas as pd

    from featagg_core.vocab.compressor import METHODS, _Prepared
    c.p_int("budget", 1)
    method = c.p_choice("method", METHODS)
    c.p_int("random_state", None, None, none=True)
    c.p_float("epsilon", 0.0, 1.0, none=True)
    c.p_bool("refine")
    unseen_mode = c.p_choice("handle_unseen", ("prior", "dedicated"))
    min_count = c.p_int("min_count", 1)
    merge_ties = c.p_bool("merge_ties")
    c.p_int("max_iter", 1)
    c.p_float("tol", 0.0)
    c.p_int("max_dp_values", 1)
    if c.has("vocabulary"):
        vocab = c.arr("vocabulary", "i", (None,))
        values = pd.Index(vocab)
    else:
        vocab = c.m_list("vocabulary")
        if not all(v is None or isinstance(v, (str, int, float, bool)) for v in vocab):
            c.fail(c._mname("vocabulary"), "holds values that are not str, int, float, "
                                           "bool or null")
        values = pd.Index(np.array(vocab, dtype=object) if vocab else np.zeros(0, object),
                          dtype=object)
    V = len(values)
    if V < 1:
        c.fail(c._mname("vocabulary"), "is empty")
    if not values.is_unique:
        c.fail(c._mname("vocabulary") if not c.has("vocabulary") else c.aname("vocabulary"),
               "names a value twice")
    counts = c.arr("counts", "i", (V, 2), lo=0, hi=2**53)
    if counts[:, 0].sum() == 0 or counts[:, 1].sum() == 0:
        c.fail(c.aname("counts"), "both classes must occur")
    order = c.permutation("order", V)
    # forged counts may pool rare values of total count 0 (a NaN key): the order check
    # below still decides, without a RuntimeWarning in the server log
    with np.errstate(invalid="ignore", divide="ignore"):
        prep = _Prepared(counts[:, 0].astype(np.int64), counts[:, 1].astype(np.int64),
                         min_count, merge_ties)
    if not np.array_equal(order, prep.order):
        c.fail(c.aname("order"), "is not the order of the values by P(C=0|x)")
    n_buckets = c.m_int("n_buckets_", 1, V)
    bucket_of = c.arr("bucket_of", "i", (V,), lo=0, hi=n_buckets - 1)
    if int(bucket_of.max()) != n_buckets - 1:
        c.fail(c._mname("n_buckets_"), "is not the number of buckets used")
    bc = c.arr("bucket_counts", "i", (n_buckets, 2), lo=0)
    for j in (0, 1):
        if not np.array_equal(bc[:, j], np.bincount(bucket_of, weights=counts[:, j],
                                                    minlength=n_buckets).astype(np.int64)):
            c.fail(c.aname("bucket_counts"), "does not add up the counts of each bucket")
    c.m_int("n_atoms_", 1, V)
    for key in ("mutual_information_", "mutual_information_full_"):
        c.m_float(key)
    c.m_float("mi_loss_", 0.0, 1.0)
    for key in ("fit_time_", "optimize_time_"):
        c.m_float(key, 0.0, none=True)
    hi = n_buckets if unseen_mode == "dedicated" else n_buckets - 1
    c.m_int("unseen_bucket_", 0, hi)
    boundaries = prep.bpos
    chosen = c.arr("chosen", "i", (None,), lo=1, hi=max(V - 1, 1))
    if chosen.size and not np.isin(chosen, boundaries).all():
        c.fail(c.aname("chosen"), "holds a split that is not an atom boundary")
    c.arr("gains", "f", (chosen.shape[0],))
    levels = c.arr("levels", "i", (None,))
    if levels.shape[0] not in (0, chosen.shape[0]):
        c.fail(c.aname("levels"), f"has {levels.shape[0]} entries for {chosen.shape[0]} splits")
    has_splits = c.m_choice("has_splits", (True, False))
    if has_splits:
        sp_ = c.arr("split_points", "i", (None,), lo=1, hi=max(V - 1, 1))
        if sp_.size > 1 and np.any(np.diff(sp_) <= 0):
            c.fail(c.aname("split_points"), "is not strictly increasing")
        if sp_.size and not np.isin(sp_, boundaries).all():
            c.fail(c.aname("split_points"), "holds a split that is not an atom boundary")
    if method in ("submodular", "threshold") and not has_splits:
        c.fail(c._mname("has_splits"), f"method {method!r} always has split points")


def registered() -> tuple:
    """Class names with declared checks (a test compares them with ARTIFACT_CLASSES)."""
    return tuple(sorted(_CHECKS))


# the checks of these classes live in their own modules; importing them registers them
# (at the end, because they import checks_for and StateChecker from this module)
from featagg_core.artifacts import (
    checks_pipeline as _artifact_checks_pipeline,
    checks_trees as _artifact_checks_trees,
)  # noqa: E402,F401
