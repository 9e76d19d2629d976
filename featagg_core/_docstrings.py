"""Shared numpydoc fragments, written once and filled into docstrings at import time.

The same parameter means the same thing in many functions (a loader's ``max_bytes``, an
evaluation's ``pipeline, data, split, rows``, an experiment's ``progress, cancel``); its
description lives here once, in :data:`DOCS`, and a docstring names it by a placeholder
line. This is what scipy (``scipy._lib.doccer``), pandas (``@doc``) and matplotlib
(``_docstring.interpd``) do; the choices here:

* a placeholder is a line that holds only ``{name}`` (any indentation), ``name`` a key of
  :data:`DOCS`; nothing else in a docstring is touched, so literal braces (``{"test",
  "valid"}``, ``{0, 1}``) need no escaping, unlike ``str.format``;
* a fragment is stored dedented (its entries at column 0, their descriptions indented by
  4) and is indented to the placeholder's column when filled, so the filled docstring has
  one consistent indentation and :func:`inspect.getdoc` (which dedents it) reads it as if
  written out by hand; blank lines inside a fragment stay empty;
* an unknown name on a placeholder line raises ``KeyError`` at import, so a typo cannot
  ship a docstring with a hole in it;
* the decorator returns the object itself (functions, methods in a class body, classes),
  only its ``__doc__`` changed; under ``python -OO`` (no docstrings) it does nothing.

Use::

    from featagg_core._docstrings import fill_doc

    @fill_doc
    def load_x(path, *, max_bytes=None, max_dim=None):
        \"\"\"Load ...

        Parameters
        ----------
        path : str
            The file.
        {load_limits}
        \"\"\"
"""
from __future__ import annotations

import re
import textwrap

__all__ = ["DOCS", "fill_doc", "fill"]

_PLACEHOLDER = re.compile(r"^([ \t]*)\{([A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.M)


def _fragments(**texts: str) -> dict:
    """Dedent each fragment and drop its surrounding blank lines."""
    return {name: textwrap.dedent(text).strip("\n") for name, text in texts.items()}


#: name -> a numpydoc fragment (one or more entries, dedented)
DOCS: dict = _fragments(
    # --- loaders (featagg_core.data) -----------------------------------------------------
    load_limits="""
        max_bytes : int, optional
            The most bytes the load may inflate from compressed members or allocate for
            declared sizes (default ``FEATAGG_MAX_LOAD_MB`` or 1 GiB, and never more than 50x
            the input beyond 64 MiB; added by :func:`_guard`).
        max_dim : int, optional
            The largest number of rows, columns, labels or nodes accepted, checked before
            anything of that size is allocated (default: the int32 index space).
        """,
)


def fill(doc: str | None, fragments: dict | None = None) -> str | None:
    """Replace each placeholder line of ``doc`` by its fragment, at the line's indent.

    Parameters
    ----------
    doc : str or None
        A docstring (``None`` under ``python -OO``: returned as is).
    fragments : dict, optional
        Name -> fragment; default :data:`DOCS`.

    Returns
    -------
    str or None
        The filled docstring.

    Raises
    ------
    KeyError
        When a placeholder line names no fragment.
    """
    if doc is None:
        return None
    table = DOCS if fragments is None else fragments

    def sub(m):
        indent, name = m.group(1), m.group(2)
        if name not in table:
            raise KeyError(f"docstring placeholder {{{name}}} names no fragment of "
                           f"featagg_core._docstrings.DOCS")
        return "\n".join(indent + line if line.strip() else ""
                         for line in table[name].split("\n"))

    return _PLACEHOLDER.sub(sub, doc)


def fill_doc(obj):
    """Decorator: fill the placeholders of ``obj.__doc__`` from :data:`DOCS`.

    Parameters
    ----------
    obj : function, method or class
        What to document.

    Returns
    -------
    object
        ``obj`` itself, its ``__doc__`` filled.
    """
    obj.__doc__ = fill(obj.__doc__)
    return obj
