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
            import stat as _stat
            mode = os.stat(path_or_file).st_mode
            if not _stat.S_ISREG(mode):
                # a FIFO would block the load forever, a device never end
                what = ("a pipe (FIFO)" if _stat.S_ISFIFO(mode) else
                        "a folder" if _stat.S_ISDIR(mode) else "a device or socket")
                raise DatasetError(f"is {what}, not a regular file", path=name)
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


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it
    (``/proc/self/status``); else set and restored at once."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_output_path(path) -> None:
    """Refuse to write ``path`` unless it is a new path or an existing regular file: a
    device node, a FIFO, a socket or a folder would be replaced (``/dev/null`` as root) or
    block. Raises OSError naming ``path`` (never a temporary file)."""
    import errno
    import stat as _stat
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or "cannot be written", path) from None
    if st is not None:
        if _stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, "is a folder, not a file: give a file name to write",
                          path)
        if not _stat.S_ISREG(st.st_mode):
            what = ("a pipe (FIFO)" if _stat.S_ISFIFO(st.st_mode) else
                    "a socket" if _stat.S_ISSOCK(st.st_mode) else "a device")
            raise OSError(errno.EINVAL, f"is {what}, not a regular file: refusing to "
                                        "write over it", path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OSError(errno.ENOENT, "its folder does not exist", path)


def _atomic_write(path, write_fn) -> None:
    """Write ``path`` through a temporary file in the same folder and ``os.replace`` it in,
    so a reader never sees a half-written file. ``write_fn(fileobj)`` writes the content.

    Only a new path or an existing regular file is written (:func:`_check_output_path`:
    a device node, FIFO or folder is refused with an OSError naming ``path``). The file
    gets the mode of the file it replaces, or the user's umask for a new one (not the
    temporary file's owner-only 0600)."""
    import stat as _stat
    path = os.fspath(path)
    _check_output_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = _stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-",
                                   suffix=os.path.basename(path)[-_MAX_NAME:], dir=folder)
    except OSError as exc:              # name the file asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror or "cannot be written", path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write_fn(fh)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        _check_output_path(path)       # it may have become a device or folder meanwhile
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or "cannot be written", path) from None
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
