"""Input plumbing shared by every reader: reading a path or an upload as bytes, the load's
:class:`~featagg_core.utils.bounded.Budget` (a context variable), :func:`_guard` (only
:class:`DatasetError` escapes a public reader; ``max_bytes=`` / ``max_dim=``), atomic writes,
and file names (suffix, stem, in-memory named copies).
"""
from __future__ import annotations

import contextvars
import io
import os
import re
import tempfile

from featagg_core.utils.bounded import Budget, reason
from featagg_core.data._containers import DatasetError


_MAX_NAME = 200


def _source_name(path_or_file) -> str:
    """A printable name for error messages: the path, or the file object's ``.name``."""
    if isinstance(path_or_file, (str, os.PathLike)):
        return os.fspath(path_or_file)
    name = getattr(path_or_file, "name", None)
    return str(name) if name else "<upload>"


def _read_bytes(path_or_file) -> tuple[bytes, str]:
    """Read the whole input as bytes: a path, or a binary file-like object (Streamlit's
    ``UploadedFile`` included). Returns ``(bytes, name)``; OS errors become DatasetError."""
    name = _source_name(path_or_file)
    try:
        if isinstance(path_or_file, (str, os.PathLike)):
            with open(path_or_file, "rb") as fh:
                raw = fh.read()
        elif isinstance(path_or_file, (bytes, bytearray, memoryview)):
            raw = bytes(path_or_file)
        else:
            if hasattr(path_or_file, "getvalue"):
                raw = path_or_file.getvalue()
            else:
                if hasattr(path_or_file, "seek"):
                    try:
                        path_or_file.seek(0)
                    except Exception:
                        pass
                raw = path_or_file.read()
            if isinstance(raw, str):
                raw = raw.encode("utf-8")
            raw = bytes(raw)
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader lets nothing else escape
        raise DatasetError(f"cannot read input ({reason(exc)})", path=name) from exc
    if raw[:3] == b"\xef\xbb\xbf":      # a UTF-8 byte-order mark (Windows editors)
        raw = raw[3:]
    _budget().add_input(len(raw))
    return raw, name


_NON_WS = re.compile(rb"[^ \t\r\n\v\f]")


def _blank(raw: bytes) -> bool:
    """True when ``raw`` is empty or only whitespace (without copying it)."""
    return _NON_WS.search(raw) is None


#: the budget of the load running in this context (thread / Streamlit session): set by
#: :func:`_guard` around a public reader, read by the internals through :func:`_budget`.
_LOAD_BUDGET: contextvars.ContextVar = contextvars.ContextVar("featagg_load_budget",
                                                              default=None)


def _budget() -> Budget:
    """The current load's :class:`~featagg_core.utils.bounded.Budget` (a default one outside a
    public reader, e.g. when a private helper is called directly)."""
    b = _LOAD_BUDGET.get()
    return b if b is not None else Budget()


def _fail_for(name, **where):
    def fail(message):
        raise DatasetError(message, path=name, **where)
    return fail


def _guard(reader):
    """Make ``reader`` let nothing but DatasetError escape: an unexpected exception from
    numpy/pandas/scipy/networkx on a malformed input becomes a DatasetError naming the
    file (the original is chained as ``__cause__``).

    Also gives the reader the keyword-only options ``max_bytes`` (the most bytes the load
    may inflate from compressed members or allocate for declared sizes; default
    ``FEATAGG_MAX_LOAD_MB`` or 1 GiB, and never more than 50x the input beyond 64 MiB)
    and ``max_dim`` (the largest number of rows, columns, labels or nodes accepted,
    checked before anything of that size is allocated; default: the int32 index space).
    A reader called from inside another shares the outer call's budget."""
    import functools
    import inspect

    @functools.wraps(reader)
    def wrapped(path_or_file, *args, max_bytes=None, max_dim=None, **kw):
        outer = _LOAD_BUDGET.get()
        token = None
        try:
            if outer is None or max_bytes is not None or max_dim is not None:
                token = _LOAD_BUDGET.set(Budget(max_bytes, max_dim))
            return reader(path_or_file, *args, **kw)
        except DatasetError:
            raise
        except MemoryError as exc:
            raise DatasetError("not enough memory to load this file",
                               path=_source_name(path_or_file)) from exc
        except RecursionError as exc:
            raise DatasetError("the file nests too deeply to be read",
                               path=_source_name(path_or_file)) from exc
        except Exception as exc:  # noqa: BLE001 - the contract: only DatasetError escapes
            raise DatasetError(f"cannot read ({reason(exc)})",
                               path=_source_name(path_or_file)) from exc
        finally:
            if token is not None:
                _LOAD_BUDGET.reset(token)

    sig = inspect.signature(reader)
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
             for n in ("max_bytes", "max_dim") if n not in sig.parameters]
    params = list(sig.parameters.values())
    var_kw = [p for p in params if p.kind == inspect.Parameter.VAR_KEYWORD]
    params = [p for p in params if p.kind != inspect.Parameter.VAR_KEYWORD] + extra + var_kw
    wrapped.__signature__ = sig.replace(parameters=params)
    return wrapped


def _atomic_write(path, write_fn) -> None:
    """Write ``path`` through a temporary file in the same folder and ``os.replace`` it in,
    so a reader never sees a half-written file. ``write_fn(fileobj)`` writes the content."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path)[-_MAX_NAME:],
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write_fn(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _stem(name: str) -> str:
    base = os.path.basename(str(name))
    low = base.lower()
    for ext in (".parquet.brotli", ".parquet.gz", ".parquet.snappy", ".parquet.zst"):
        if low.endswith(ext):
            return base[: -len(ext)]
    stem, ext = os.path.splitext(base)
    return stem if stem else base


def _suffix(name: str) -> str:
    """Lower-case extension; ``x.parquet.brotli`` and friends count as ``.parquet``."""
    base = os.path.basename(str(name)).lower()
    for compound in (".parquet.brotli", ".parquet.gz", ".parquet.snappy", ".parquet.zst"):
        if base.endswith(compound):
            return ".parquet"
    return os.path.splitext(base)[1]


class _NamedBytes(io.BytesIO):
    """In-memory copy of an input that keeps its name (for messages and sniffing)."""

    def __init__(self, raw: bytes, name: str):
        super().__init__(raw)
        self.name = name


def _raw_file(raw: bytes, name: str, original=None):
    """The original path when there is one (so neighbours such as ``<stem>.xml`` can be
    found), else an in-memory named file over ``raw``."""
    if isinstance(original, (str, os.PathLike)):
        return original
    return _NamedBytes(raw, name)
