"""The machinery that checks an artifact's state: :class:`StateChecker` and
:func:`validate_state`.

A kernel trusts its arrays: a cluster id beyond ``n_clusters``, a tree child index outside
the tree or a csr ``indptr`` that runs past its ``indices`` is an out-of-bounds read or
write in compiled code, i.e. a crashed server. So :func:`validate_state` checks, for the
class named in the manifest, **everything** a kernel or a method will index with:

* every ``params`` field against the constructor's parameter set (no field missing, none
  unknown) and its declared type and range, then the estimator's own parameter check
  when it has one (``_check_params`` / ``_validate`` / ``_validate_params``); a
  constructor parameter added to an estimator after its checks were written must be a
  plain JSON scalar (it is declared in its family module as soon as a loaded model uses it);
* every ``meta`` field against its declared type and range (unknown fields refused);
* every array's presence, dtype kind, shape and value range against the others (cluster
  ids < n_clusters, tree parents before children and child indices inside the tree,
  permutations, csr ``indptr`` monotone from 0 to nnz and ``indices`` < the column
  count, finite values, counts that equal the counts they summarise), and that no array
  is left unclaimed.

What each class must hold is declared elsewhere, one check function per class in the
family modules of this package; a :class:`StateChecker` carries the table of those
functions (class name -> check) so that a composite artifact's members are checked as
their own classes. This module imports no family module. A class with no entry in the
table is refused. Every failure is an ``ArtifactError`` naming the member (``meta``,
``params`` or ``arrays/<name>.npy``) and the field.
"""
from __future__ import annotations

import inspect
import math
from typing import Callable, Dict, Mapping, NoReturn, Optional, Sequence

import numpy as np

from featagg_core.artifacts.registry import ARTIFACT_CLASS_NAMES, artifact_class
from featagg_core.utils.docstrings import fill

INT32_MAX = 2**31 - 1
MAX_TREES = 10_000

#: what a family module declares: class name -> the function checking that class's state
CheckTable = Mapping[str, Callable[["StateChecker"], None]]

#: the numpydoc entries the accessors of :class:`StateChecker` share
_ACCESSOR_DOCS = {
    "key": "key : str\n    The field's name.",
    "array_key": "key : str\n    The array's name without this member's prefix.",
    "bounds": "lo, hi : number or None\n    The inclusive bounds (None: unbounded).",
    "none": "none : bool, default=False\n    Whether null is allowed.",
    "optional": "optional : bool, default=False\n    Whether the field may be absent (then "
                "None is returned).",
    "choices": "choices : sequence\n    The allowed values.",
}


def _accessor_doc(fn):
    """Fill the shared entries (:data:`_ACCESSOR_DOCS`) into an accessor's docstring."""
    fn.__doc__ = fill(fn.__doc__, _ACCESSOR_DOCS)
    return fn


class StateChecker:
    """Typed access to (params, meta, arrays) of one artifact (or one member of a
    composite artifact, ``prefix`` naming it); every accessor validates and records what
    was consumed, :meth:`finish` refuses anything left over. ``checks`` is the table of
    check functions (class name -> check), used for the members of a composite artifact."""

    def __init__(self, cls_name: str, params: dict, meta: dict, arrays: Dict[str, np.ndarray],
                 where: str, error, checks: CheckTable, prefix: str = "", label: str = ""):
        self.cls_name = cls_name
        self.checks = checks
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
        """Raise the checker's error naming the artifact, the class (or member) and ``field``.

        Parameters
        ----------
        field : str
            What is wrong (e.g. ``"meta field 'n_labels_'"`` or an array's member name).
        message : str
            Why.

        Raises
        ------
        ArtifactError
            Always (the ``error`` class the checker was made with).
        """
        raise self.error(f"{self.where}: {self.label} {field}: {message}")

    def _pname(self, key):
        return f"params field {key!r}"

    def _mname(self, key):
        return f"meta field {key!r}"

    @_accessor_doc
    def aname(self, key):
        """The member name of array ``key`` in the archive, for messages.

        Parameters
        ----------
        {array_key}

        Returns
        -------
        str
            ``arrays/<prefix><key>.npy``.
        """
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
            self.fail(label, f"must be an integer, got {short_repr(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            self.fail(label, f"= {v} is out of range [{lo}, {hi}]")
        return int(v)

    def _float(self, v, label, lo, hi, none, lo_open=False, finite=True):
        if v is None and none:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(label, f"must be a number, got {short_repr(v)}")
        v = float(v)
        if finite and not math.isfinite(v):
            self.fail(label, f"must be finite, got {v}")
        if (lo is not None and (v < lo or (lo_open and v == lo))) or (hi is not None and v > hi):
            self.fail(label, f"= {v} is out of range {'(' if lo_open else '['}{lo}, {hi}]")
        return v

    def _choice(self, v, label, choices):
        if not any(v is c or (type(v) is type(c) and v == c) for c in choices):
            self.fail(label, f"must be one of {list(choices)}, got {short_repr(v)}")
        return v

    @_accessor_doc
    def p_int(self, key, lo=None, hi=INT32_MAX, none=False):
        """The integer params field ``key``, in [lo, hi].

        Parameters
        ----------
        {key}
        {bounds}
        {none}

        Returns
        -------
        int or None
            The value.
        """
        return self._int(self._get(self.params, self._p, key, self._pname(key)),
                         self._pname(key), lo, hi, none)

    @_accessor_doc
    def p_float(self, key, lo=None, hi=None, none=False, lo_open=False):
        """The finite number params field ``key``, in [lo, hi] (or (lo, hi] when ``lo_open``).

        Parameters
        ----------
        {key}
        {bounds}
        {none}
        lo_open : bool, default=False
            Whether ``lo`` itself is refused.

        Returns
        -------
        float or None
            The value.
        """
        return self._float(self._get(self.params, self._p, key, self._pname(key)),
                           self._pname(key), lo, hi, none, lo_open)

    @_accessor_doc
    def p_choice(self, key, choices):
        """The params field ``key``, one of ``choices`` (equal value and type).

        Parameters
        ----------
        {key}
        {choices}

        Returns
        -------
        object
            The value.
        """
        return self._choice(self._get(self.params, self._p, key, self._pname(key)),
                            self._pname(key), choices)

    @_accessor_doc
    def p_bool(self, key, none=False):
        """The boolean params field ``key``.

        Parameters
        ----------
        {key}
        {none}

        Returns
        -------
        bool or None
            The value.
        """
        return self.p_choice(key, (True, False, None) if none else (True, False))

    @_accessor_doc
    def p_any(self, key):
        """The params field ``key``, unchecked (the caller checks it).

        Parameters
        ----------
        {key}

        Returns
        -------
        object
            The value.
        """
        return self._get(self.params, self._p, key, self._pname(key))

    @_accessor_doc
    def has_param(self, key) -> bool:
        """Whether ``key`` is in params (a parameter only some versions of a class have:
        check it when present, so that it is never left unchecked).

        Parameters
        ----------
        {key}

        Returns
        -------
        bool
            True when present.
        """
        return key in self.params

    @_accessor_doc
    def m_int(self, key, lo=None, hi=INT32_MAX, none=False, optional=False):
        """The integer meta field ``key``, in [lo, hi].

        Parameters
        ----------
        {key}
        {bounds}
        {none}
        {optional}

        Returns
        -------
        int or None
            The value.
        """
        v = self._get(self.meta, self._m, key, self._mname(key), optional)
        return None if (optional and key not in self.meta) else \
            self._int(v, self._mname(key), lo, hi, none)

    @_accessor_doc
    def m_float(self, key, lo=None, hi=None, none=False, optional=False, finite=True):
        """The number meta field ``key``, in [lo, hi].

        Parameters
        ----------
        {key}
        {bounds}
        {none}
        {optional}
        finite : bool, default=True
            Whether NaN and infinities are refused.

        Returns
        -------
        float or None
            The value.
        """
        v = self._get(self.meta, self._m, key, self._mname(key), optional)
        return None if (optional and key not in self.meta) else \
            self._float(v, self._mname(key), lo, hi, none, finite=finite)

    @_accessor_doc
    def m_choice(self, key, choices):
        """The meta field ``key``, one of ``choices`` (equal value and type).

        Parameters
        ----------
        {key}
        {choices}

        Returns
        -------
        object
            The value.
        """
        return self._choice(self._get(self.meta, self._m, key, self._mname(key)),
                            self._mname(key), choices)

    @_accessor_doc
    def m_any(self, key, optional=False):
        """The meta field ``key``, unchecked (the caller checks it).

        Parameters
        ----------
        {key}
        {optional}

        Returns
        -------
        object
            The value.
        """
        return self._get(self.meta, self._m, key, self._mname(key), optional)

    @_accessor_doc
    def m_list(self, key, length=None):
        """The list meta field ``key`` (of ``length`` entries when given).

        Parameters
        ----------
        {key}
        length : int, optional
            The number of entries it must have.

        Returns
        -------
        list
            The value (its entries unchecked).
        """
        v = self._get(self.meta, self._m, key, self._mname(key))
        if not isinstance(v, list):
            self.fail(self._mname(key), f"must be a list, got {short_repr(v)}")
        if length is not None and len(v) != length:
            self.fail(self._mname(key), f"has {len(v)} entries, expected {length}")
        return v

    # -- arrays
    @_accessor_doc
    def has(self, key) -> bool:
        """Whether this member holds array ``key`` (an array only some states have).

        Parameters
        ----------
        {array_key}

        Returns
        -------
        bool
            True when present.
        """
        return (self.prefix + key) in self.arrays

    @_accessor_doc
    def arr(self, key, kind: str, shape: Sequence[Optional[int]], *, lo=None, hi=None,
            finite=True, rule: str = "") -> np.ndarray:
        """Array ``key``, checked and claimed (an unclaimed array is refused by :meth:`finish`).

        Parameters
        ----------
        {array_key}
        kind : {"i", "f", "n"}
            Its dtype kind: any integer, float, or either.
        shape : sequence of int or None
            Its shape (None: any length on that axis).
        lo, hi : number or None
            Inclusive bounds of its values (None: unbounded).
        finite : bool, default=True
            Whether a float array must hold no NaN or infinity.
        rule : str, optional
            Where the bounds come from, for the message.

        Returns
        -------
        numpy.ndarray
            The array.
        """
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

    @_accessor_doc
    def permutation(self, key, n: int, shape=None) -> np.ndarray:
        """Array ``key``: a permutation of 0..n-1 (each row of it, for a 2-D ``shape``).

        Parameters
        ----------
        {array_key}
        n : int
            The number of items permuted.
        shape : tuple of int, optional
            Its shape (default ``(n,)``).

        Returns
        -------
        numpy.ndarray
            The array.
        """
        a = self.arr(key, "i", shape or (n,), lo=0, hi=max(n - 1, 0))
        rows = a.reshape(-1, n) if n else a.reshape(-1, 0)
        for r in rows:
            if np.bincount(r, minlength=n).max(initial=1) != 1:
                self.fail(self.aname(key), f"is not a permutation of 0..{n - 1}")
        return a

    def csr(self, data_key, indices_key, indptr_key, shape, *, finite=True) -> None:
        """The parts of a csr matrix of ``shape``: indptr n+1 non-decreasing from 0 to nnz,
        indices in [0, n_cols), data finite.

        Parameters
        ----------
        data_key, indices_key, indptr_key : str
            The names of its three arrays.
        shape : tuple of int
            (rows, columns) of the matrix.
        finite : bool, default=True
            Whether the data must hold no NaN or infinity.
        """
        n, m = shape
        ptr = self.arr(indptr_key, "i", (n + 1,))
        nnz = int(ptr[-1]) if ptr.size else 0
        if ptr[0] != 0 or (n and np.any(np.diff(ptr.astype(np.int64)) < 0)):
            self.fail(self.aname(indptr_key), "is not non-decreasing from 0")
        self.arr(indices_key, "i", (nnz,), lo=0, hi=m - 1 if m else -1,
                 rule=f"column indices of a matrix with {m} columns")
        self.arr(data_key, "f", (nnz,), finite=finite)

    def sub(self, cls_name: str, params, meta, prefix: str, label: str) -> "StateChecker":
        """Check a member of a composite artifact as its own class (its arrays prefixed
        ``prefix``); its arrays count as claimed by this checker.

        Parameters
        ----------
        cls_name : str
            The member's class (an entry of the check table).
        params, meta : dict
            The member's params and meta.
        prefix : str
            The prefix of its array names, after this checker's own.
        label : str
            How messages name it.

        Returns
        -------
        StateChecker
            The member's checker (its ``meta`` already checked).
        """
        sub = StateChecker(cls_name, params, meta, self.arrays, self.where, self.error,
                           self.checks, prefix=self.prefix + prefix, label=label)
        run_checks(sub)
        self._a |= sub._a
        return sub

    def finish(self) -> None:
        """Refuse what the class's check did not consume: a params field that is not a
        constructor parameter (or an undeclared one that is not a plain JSON scalar), an
        unexpected meta field, an unclaimed array (at the top level)."""
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
                                            f"{short_repr(v)}")
        for key in self.meta:
            if key not in self._m:
                self.fail(self._mname(key), "is unexpected")
        if not self.prefix:
            left = sorted(k for k in self.arrays if k not in self._a)
            if left:
                self.fail(f"arrays/{left[0]}.npy", "is not part of this class's state")



def short_repr(v) -> str:
    """``repr(v)`` cut to 60 characters, for messages.

    Parameters
    ----------
    v : object
        Any value read from a file.

    Returns
    -------
    str
        Its shortened repr.
    """
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _num(v):
    return v.item() if hasattr(v, "item") else v


def run_checks(c: StateChecker) -> None:
    """The declared check of ``c``'s class, framed by the parameter-name check, the
    leftover check (:meth:`StateChecker.finish`) and the estimator's own parameter check.

    Parameters
    ----------
    c : StateChecker
        The checker of one artifact or member; its table must hold its class.
    """
    fn = c.checks.get(c.cls_name)
    if fn is None:
        c.fail("class", "has no declared artifact checks, so it cannot be loaded")
    _check_param_names(c)
    fn(c)
    c.finish()
    _estimator_param_check(c)


def validate_state(cls_name: str, params: dict, meta: dict, arrays: Dict[str, np.ndarray],
                   where: str, error, checks: CheckTable) -> None:
    """Raise ``error`` (ArtifactError) unless (params, meta, arrays) is a consistent state of
    class ``cls_name``, as declared by ``checks``, that every method of the rebuilt
    estimator can use safely.

    Parameters
    ----------
    cls_name : str
        The class the manifest names.
    params, meta : dict
        The manifest's ``params`` and ``meta``.
    arrays : dict of str to numpy.ndarray
        Every array of the artifact.
    where : str
        The file's name, for messages.
    error : type
        The exception raised (``ArtifactError``).
    checks : mapping of str to callable
        The check table (class name -> check function).
    """
    run_checks(StateChecker(cls_name, params, meta, arrays, where, error, checks))


def _cls(name: str):
    """The class named ``name``: one of the artifact table, or a step class that only lives
    inside a Pipeline artifact (``featagg_core.runs.pipeline.LOCAL_STEP_CLASSES``)."""
    if name in ARTIFACT_CLASS_NAMES:
        return artifact_class(name)
    from featagg_core.runs.pipeline import LOCAL_STEP_CLASSES
    return LOCAL_STEP_CLASSES[name]


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
    sibling class with a subset of the parameters is caught). A parameter the class lists
    in ``_params_added_later`` (added after artifacts of it were saved) may be absent: the
    class's ``_from_artifact_state`` fills it in."""
    later = getattr(_cls(c.cls_name), "_params_added_later", ())
    for p in _ctor_params(c.cls_name):
        if p not in c.params and p not in later:
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

