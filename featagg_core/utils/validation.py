"""Input checks shared by the estimators (DEFRAG, FIAT/REFRAG, KTXMLC, BMGUFS).

Why this module exists: several estimator modules grew their own private copies of the
same argument checks (dense/sparse -> canonical csr, "contains NaN or infinite values",
integer parameters, 0/1 label matrices). The copies that really behave the same live here
once, so that a fix lands everywhere.

Only the checks whose semantics are identical in every caller are here. Where a module's
check differs in a way that matters (dtype, dropping explicit zeros, the order of checks,
the wording of an error message that users or tests see), the module keeps its own helper
or wraps these with the difference spelled out there, e.g.

* ``fiat._as_csr`` (also used by REFRAG) builds a float64 copy, drops stored zeros and
  checks for NaN before summing duplicates, and refuses non-numeric input;
* ``refrag._check_labels`` is float64, says "0/1 values" and checks 0/1 before the row
  count, and accepts a label matrix without columns;
* ``bmgufs`` words its messages about the matrices as ``"A: ..."`` / ``"X: ..."`` and has
  graph-specific checks (its parameters use the declared constraints below).

Parameters are declared, not checked by hand: an estimator lists what each of its
``__init__`` parameters may be in a class attribute ``_parameter_constraints`` (in the spirit
of scikit-learn's, whose machinery is private, so featagg has its own) and calls
:func:`validate_params` at the start of ``fit``::

    _parameter_constraints = {
        "d0": [Interval(Integral, 1, None, closed="left")],
        "representation": [Options(str, {"X", "XY"})],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "sample_points": [Interval(Real, 0, 1, closed="right")],
        "max_features": [None, Interval(Integral, 1, None, closed="left")],
        "progress": [None, callable],
    }

Every refused value gets the one wording ``"<name> must be <what it may be>, got <value>"``
(e.g. ``"d0 must be an integer >= 1, got 0"``, ``"alpha must be a number in (0, 1], got
1.5"``, ``"loss must be one of 'log', 'mixed', got 'hinge'"``), raised as
:class:`InvalidParameterError` (a ``ValueError``, and a ``TypeError`` for callers that catch
that). Checks that relate a parameter to the data (``n_clusters`` at most the number of
features) stay in ``fit`` and use the same wording through :func:`parameter_error`.

Everything here is a pure function or an immutable description; no module-level mutable
state.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

__all__ = ["as_csr", "check_finite", "check_n_features", "check_binary_labels",
           "check_int", "Interval", "Options", "InvalidParameterError", "validate_params",
           "check_param", "parameter_error", "describe_constraints"]


class InvalidParameterError(ValueError, TypeError):
    """A parameter value outside what the estimator declares (a ``ValueError``; also a
    ``TypeError``, as scikit-learn's ``InvalidParameterError``, for callers that catch that
    for a value of the wrong type)."""


def parameter_error(name: str, what: str, value: Any) -> InvalidParameterError:
    """The error for parameter ``name`` refused with the one wording of the package:
    ``"<name> must be <what>, got <value!r>"``.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    what : str
        What the value may be, in words ("an integer >= 1").
    value : object
        The refused value.

    Returns
    -------
    InvalidParameterError
        The error, for the caller to raise.
    """
    return InvalidParameterError(f"{name} must be {what}, got {value!r}")


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def _fmt_number(x) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x)) if not isinstance(x, bool) else str(x)
    return repr(x) if isinstance(x, float) else str(x)


class Interval:
    """Numbers of one kind between two bounds.

    Parameters
    ----------
    kind : numbers.Integral or numbers.Real
        ``Integral``: Python or numpy integers (bools are refused); ``Real``: any finite
        real number, integers included (bools, NaN and infinities are refused).
    low, high : number or None
        The bounds; ``None`` leaves that side open to infinity.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which bounds belong to the interval.
    """

    __slots__ = ("kind", "low", "high", "closed")

    def __init__(self, kind, low, high, *, closed: str = "both"):
        if kind not in (Integral, Real):
            raise TypeError("Interval kind must be numbers.Integral or numbers.Real")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be one of 'both', 'left', 'right', 'neither', "
                             f"got {closed!r}")
        if low is not None and high is not None and low > high:
            raise ValueError(f"Interval low {low} is above high {high}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "closed", closed)

    def __setattr__(self, name, value):  # immutable: constraints are shared class data
        raise AttributeError("Interval is immutable")

    def __repr__(self) -> str:
        return (f"Interval({self.kind.__name__}, {self.low!r}, {self.high!r}, "
                f"closed={self.closed!r})")

    def is_satisfied_by(self, value) -> bool:
        """Whether ``value`` is a number of this kind inside the bounds.

        Parameters
        ----------
        value : object
            The value to test (bools, NaN and infinities never satisfy an interval).

        Returns
        -------
        bool
            True when it is a number of this kind inside the bounds.
        """
        if _is_bool(value):
            return False
        if self.kind is Integral:
            if not isinstance(value, Integral):
                return False
        else:
            if not isinstance(value, Real):
                return False
            if not math.isfinite(float(value)):
                return False
        low_ok = (self.low is None or value > self.low
                  or (value == self.low and self.closed in ("both", "left")))
        high_ok = (self.high is None or value < self.high
                   or (value == self.high and self.closed in ("both", "right")))
        return bool(low_ok and high_ok)

    def describe(self) -> str:
        """What a value may be, in words.

        Returns
        -------
        str
            E.g. "an integer >= 1", "a number in (0, 1]".
        """
        noun = "an integer" if self.kind is Integral else "a number"
        lo, hi = self.low, self.high
        left_closed = self.closed in ("both", "left")
        right_closed = self.closed in ("both", "right")
        if lo is None and hi is None:
            return noun
        if hi is None:
            return f"{noun} {'>=' if left_closed else '>'} {_fmt_number(lo)}"
        if lo is None:
            return f"{noun} {'<=' if right_closed else '<'} {_fmt_number(hi)}"
        return (f"{noun} in {'[' if left_closed else '('}{_fmt_number(lo)}, "
                f"{_fmt_number(hi)}{']' if right_closed else ')'}")


class Options:
    """One of a fixed set of values of one type.

    Parameters
    ----------
    kind : type
        The type every option has (e.g. ``str``); a value of another type is refused even
        when it compares equal to an option.
    values : iterable
        The allowed values.
    """

    __slots__ = ("kind", "values")

    def __init__(self, kind: type, values: Iterable):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "values", frozenset(values))

    def __setattr__(self, name, value):
        raise AttributeError("Options is immutable")

    def __repr__(self) -> str:
        return f"Options({self.kind.__name__}, {sorted(self.values, key=repr)!r})"

    def is_satisfied_by(self, value) -> bool:
        """Whether ``value`` is one of the options (and of their type).

        Parameters
        ----------
        value : object
            The value to test.

        Returns
        -------
        bool
            True when it is one of the options and of their type.
        """
        if _is_bool(value) and self.kind is not bool:
            return False
        return isinstance(value, self.kind) and value in self.values

    def describe(self) -> str:
        """The options in words.

        Returns
        -------
        str
            ``"one of 'avg', 'sum'"`` (sorted, so messages are stable), or the one option.
        """
        opts = sorted(self.values, key=repr)
        if len(opts) == 1:
            return repr(opts[0])
        return "one of " + ", ".join(repr(v) for v in opts)


def _satisfies(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint == "boolean":
        return _is_bool(value)
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, (Interval, Options)):
        return constraint.is_satisfied_by(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint) and not (_is_bool(value) and constraint is not bool)
    if isinstance(constraint, tuple) and all(isinstance(t, type) for t in constraint):
        return isinstance(value, constraint)
    raise TypeError(f"unknown parameter constraint {constraint!r}")


def _describe_one(constraint) -> str:
    if constraint is None:
        return "None"
    if constraint == "boolean":
        return "True or False"
    if constraint is callable:
        return "a function"
    if isinstance(constraint, (Interval, Options)):
        return constraint.describe()
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return " or ".join(f"a {t.__name__}" for t in constraint)


def describe_constraints(constraints: list) -> str:
    """The alternatives of one parameter in words.

    Parameters
    ----------
    constraints : list
        Alternatives, as :func:`check_param` takes them.

    Returns
    -------
    str
        Their descriptions joined with "or" (None last).
    """
    parts = [_describe_one(c) for c in constraints if c is not None]
    if any(c is None for c in constraints):
        parts.append("None")
    return " or ".join(parts)


def check_param(name: str, value, constraints: list):
    """Refuse ``value`` for parameter ``name`` unless it satisfies one of ``constraints``.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    value : object
        The value to check.
    constraints : list
        Alternatives: ``None`` (the value None), ``"boolean"``, ``callable`` (any callable),
        an :class:`Interval`, an :class:`Options`, or a type / tuple of types (isinstance).

    Returns
    -------
    object
        ``value`` itself when it passes.

    Raises
    ------
    InvalidParameterError
        With the message ``"<name> must be <alternatives>, got <value!r>"``.
    """
    if not any(_satisfies(c, value) for c in constraints):
        raise parameter_error(name, describe_constraints(constraints), value)
    return value


def validate_params(params: Mapping[str, Any], constraints: Mapping[str, list]) -> None:
    """Check every parameter in ``params`` that ``constraints`` declares.

    Parameters
    ----------
    params : mapping
        Parameter name -> value, usually ``estimator.get_params(deep=False)``.
    constraints : mapping
        Parameter name -> list of alternatives (see :func:`check_param`). A parameter in
        ``params`` without an entry is an error of the estimator's declaration (every
        ``__init__`` parameter is declared; ``"no_validation"`` opts one out explicitly).

    Raises
    ------
    InvalidParameterError
        For the first refused parameter, in the order of ``params``.
    TypeError
        When a parameter has no declared constraint (a bug of the estimator, not of the
        user's input).
    """
    for name, value in params.items():
        if name not in constraints:
            raise TypeError(f"parameter {name!r} has no declared constraint")
        spec = constraints[name]
        if spec == "no_validation":
            continue
        check_param(name, value, spec)


def check_finite(M: sp.spmatrix, name: str) -> None:
    """Refuse a sparse matrix with a NaN or infinite stored value.

    Parameters
    ----------
    M : scipy sparse matrix
        The matrix.
    name : str
        Its name in the message ("X contains NaN or infinite values").

    Raises
    ------
    ValueError
        When a stored value is NaN or infinite.
    """
    if M.nnz and not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} contains NaN or infinite values")


def check_n_features(M, name: str, n_features, what: str = "features") -> None:
    """Refuse ``M`` when ``n_features`` is given and ``M`` has another number of columns.

    Parameters
    ----------
    M : matrix
        Anything with a ``shape``.
    name : str
        Its name in the message.
    n_features : int or None
        The number of columns the model was fitted on; None checks nothing.
    what : str, default "features"
        What the columns are, in the message.

    Raises
    ------
    ValueError
        When the column counts differ.
    """
    if n_features is not None and M.shape[1] != n_features:
        raise ValueError(f"{name} has {M.shape[1]} {what}, the model was fitted on "
                         f"{n_features}")


def as_csr(X, name: str = "X", *, dtype=np.float32, n_features=None,
           what: str = "features") -> sp.csr_matrix:
    """``X`` (dense 2-D array-like or scipy sparse) as a csr matrix of ``dtype`` with sorted
    indices and duplicates summed (stored zeros are kept).

    The caller's matrix is never modified: it is copied when its dtype differs or it is not
    in canonical format, otherwise the result may share its arrays. Raises ``ValueError``
    naming ``name`` when dense ``X`` is not 2-D, when a stored value is NaN or infinite,
    and, if ``n_features`` is given, when ``X`` has another number of columns. No check of
    the dtype kind: non-numeric input fails in the conversion (callers that want a
    friendlier message check first).

    Parameters
    ----------
    X : array-like or scipy sparse matrix
        The matrix.
    name : str, default "X"
        Its name in messages.
    dtype : numpy dtype, default float32
        The result's dtype.
    n_features : int, optional
        The number of columns it must have.
    what : str, default "features"
        What the columns are, in messages.

    Returns
    -------
    scipy.sparse.csr_matrix
        Canonical csr of ``dtype``.
    """
    if not sp.issparse(X):
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got {arr.ndim} dimension(s)")
        X = sp.csr_matrix(arr)
    X = sp.csr_matrix(X)
    if X.dtype != dtype:
        X = X.astype(dtype)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts the indices
    check_finite(X, name)
    check_n_features(X, name, n_features, what)
    return X


def check_binary_labels(Y, n_rows: int, name: str = "Y", *,
                        dtype=np.float32) -> sp.csr_matrix:
    """A 0/1 label matrix with ``n_rows`` rows and at least one label column, as a new
    canonical csr of ``dtype`` without stored zeros (the caller's matrix is not modified).

    Checks, in this order: 2-D, row count, only 0/1 entries, at least one column.

    Parameters
    ----------
    Y : array-like or scipy sparse matrix
        The label matrix.
    n_rows : int
        The number of rows it must have (those of X).
    name : str, default "Y"
        Its name in messages.
    dtype : numpy dtype, default float32
        The result's dtype.

    Returns
    -------
    scipy.sparse.csr_matrix
        Canonical csr of ``dtype`` holding only ones.
    """
    if not sp.issparse(Y):
        Y = np.asarray(Y)
        if Y.ndim != 2:
            raise ValueError(f"{name} must be a 2-D 0/1 label matrix, got {Y.ndim} "
                             f"dimension(s)")
        Y = sp.csr_matrix(Y)
    Y = sp.csr_matrix(Y, dtype=dtype, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    Y.sort_indices()
    if Y.shape[0] != n_rows:
        raise ValueError(f"{name} has {Y.shape[0]} rows but X has {n_rows}")
    if Y.nnz and not np.all(Y.data == 1):
        raise ValueError(f"{name} must hold only 0/1 entries")
    if Y.shape[1] == 0:
        raise ValueError(f"{name} has no labels")
    return Y


def check_int(name: str, value, low: int, allow_none: bool = False):
    """``value`` as a Python int ``>= low`` (bools refused); ``None`` passes through when
    ``allow_none``. The one wording: ``"<name> must be an integer >= <low>, got <value>"``.

    Parameters
    ----------
    name : str
        The parameter's name.
    value : object
        The value to check.
    low : int
        The smallest value allowed.
    allow_none : bool, default False
        Whether None passes.

    Returns
    -------
    int or None
        ``value`` as an int (None when it is None and allowed).
    """
    if value is None and allow_none:
        return None
    interval = Interval(Integral, low, None, closed="left")
    check_param(name, value, [interval, None] if allow_none else [interval])
    return int(value)
