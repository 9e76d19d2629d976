"""Bounded reading of untrusted containers: zip archives, ``.npy`` members, JSON, XML.

Used by the dataset readers (:mod:`featagg_core.data`) and the artifact loader
(:mod:`featagg_core.artifacts.store`), so that a small hostile file can never cost more memory
or time than a budget fixed before any byte is inflated:

* :class:`Budget` -- how many bytes one load may inflate or allocate for declared content
  (``max_bytes``, and at most ``MAX_INFLATION_RATIO`` times the input size once the input
  exceeds ``MIN_BUDGET_BYTES`` / ratio). Every member is charged *before* it is
  inflated, from the size its header declares, and inflation itself stops at that size.
* :func:`open_zip` -- a zip archive whose members are allow-listed (stored or deflated,
  not encrypted, each name once) before anything is read.
* :func:`read_member` / :func:`read_npy_member` -- a member's bytes, or the array of an
  ``.npy`` member, read in bounded chunks after its declared size (and, for ``.npy``,
  its header's shape x itemsize, which must equal the member size) was checked against
  the budget; object, structured and sub-array dtypes are refused (never unpickled).
* :func:`loads_json` -- JSON with a size bound and a nesting-depth bound checked by a
  linear scan before :func:`json.loads` runs (a deeply nested document would otherwise
  raise ``RecursionError``).
* :func:`parse_xml_safely` -- XML parsed by expat with handlers that refuse any DTD,
  entity declaration or processing of external entities. The check is made by the
  parser on the *decoded* document, so it holds for every encoding (UTF-16 included),
  unlike a regular expression over the raw bytes.

Errors are raised through a ``fail(message)`` callable supplied by the caller (a
``DatasetError`` for readers, an ``ArtifactError`` for artifacts): nothing else escapes.
No module-level mutable state.
"""
from __future__ import annotations

import io
import json
import os
import re
import zipfile
from typing import Callable, Dict, List, NoReturn, Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

#: default budget of one load through the Python API / command line, overridable with the
#: environment variable ``FEATAGG_MAX_LOAD_MB`` or a reader's ``max_bytes=``
DEFAULT_MAX_BYTES = 1 << 30
#: a load may always inflate this much (small files with well-compressed members) ...
MIN_BUDGET_BYTES = 64 << 20
#: ... and beyond that at most this many times the bytes of its input files
MAX_INFLATION_RATIO = 50
_CHUNK = 1 << 20
_ALLOWED_COMPRESSION = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_NPY_MAX_HEADER = 10_000

Fail = Callable[[str], NoReturn]

#: the longest library message a refusal quotes (a parser can put a whole line in it)
_MAX_REASON_CHARS = 300


def reason(exc: BaseException) -> str:
    """What a library's exception says about a file, in words a person can act on.

    Readers quote it in their refusals ("not a readable parquet file (Parquet magic bytes
    not found ...)"). The exception's class name is left out: "ArrowInvalid" or
    "ParseError" means nothing to someone who uploaded a file. Whitespace is collapsed and
    the text is cut at ``_MAX_REASON_CHARS``. A ``KeyError``'s text is only the missing
    key's repr, and some exceptions (``EOFError``, ``zlib.error``) can have none; both
    give a plain phrase instead.

    Parameters
    ----------
    exc : BaseException
        The exception a library raised on the file.

    Returns
    -------
    str
        The text to quote in the refusal, never empty.
    """
    text = "" if isinstance(exc, KeyError) else " ".join(str(exc).split())
    if len(text) > _MAX_REASON_CHARS:
        text = text[:_MAX_REASON_CHARS - 3] + "..."
    if text:
        return text
    if isinstance(exc, EOFError):
        return "it ends too early"
    return "its content does not follow the format"


def default_max_bytes() -> int:
    """The byte budget of one load.

    ``FEATAGG_MAX_LOAD_MB`` (MiB) when set to a positive number, else
    :data:`DEFAULT_MAX_BYTES`.

    Returns
    -------
    int
        Bytes.
    """
    text = os.environ.get("FEATAGG_MAX_LOAD_MB", "").strip()
    if text:
        try:
            mb = float(text)
        except ValueError:
            mb = 0.0
        if mb > 0:
            return int(mb * (1 << 20))
    return DEFAULT_MAX_BYTES


def mib(n: int) -> str:
    """A byte count for messages: MiB with one decimal, or GiB with two from 1 GiB on.

    Parameters
    ----------
    n : int
        Bytes.

    Returns
    -------
    str
        E.g. "12.5 MiB".
    """
    return f"{n / (1 << 20):,.1f} MiB" if n < (1 << 30) else f"{n / (1 << 30):,.2f} GiB"


class Budget:
    """Bytes one load may inflate (decompressed members) or allocate for declared sizes.

    ``allowance = min(max_bytes, max(MIN_BUDGET_BYTES, MAX_INFLATION_RATIO * input_bytes))``
    where ``input_bytes`` is the size of every input file of the load (:meth:`add_input`).
    :meth:`charge` adds to the bytes used and refuses (via ``fail``) what would exceed it.
    """

    def __init__(self, max_bytes: Optional[int] = None, max_dim: Optional[int] = None):
        if max_bytes is None:
            max_bytes = default_max_bytes()
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) \
                or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive integer (bytes), got {max_bytes!r}")
        if max_dim is not None and (isinstance(max_dim, bool) or
                                    not isinstance(max_dim, (int, np.integer)) or max_dim < 1):
            raise ValueError(f"max_dim must be a positive integer, got {max_dim!r}")
        self.max_bytes = int(max_bytes)
        self.max_dim = None if max_dim is None else int(max_dim)
        self.input_bytes = 0
        self.used = 0

    @property
    def allowance(self) -> int:
        return min(self.max_bytes, max(MIN_BUDGET_BYTES, MAX_INFLATION_RATIO * self.input_bytes))

    def add_input(self, n: int) -> None:
        """Count ``n`` more bytes of input files (raising the allowance up to ``max_bytes``).

        Parameters
        ----------
        n : int
            Bytes of an input file.
        """
        self.input_bytes += int(n)

    def remaining(self) -> int:
        """Bytes left of the allowance.

        Returns
        -------
        int
            At least 0.
        """
        return max(0, self.allowance - self.used)

    def describe(self) -> str:
        """The allowance for messages, saying where it comes from.

        Returns
        -------
        str
            E.g. "64.0 MiB (50x the input size)".
        """
        why = ("the load budget" if self.allowance == self.max_bytes else
               f"{MAX_INFLATION_RATIO}x the input size")
        return f"{mib(self.allowance)} ({why})"

    @fill_doc
    def charge(self, n: int, what: str, fail: Fail) -> None:
        """Add ``n`` bytes to the bytes used; refuse (via ``fail``) what would exceed the allowance.

        Parameters
        ----------
        n : int
            Bytes about to be inflated or allocated.
        what : str
            What they are, for the message.
        {fail}
        """
        n = int(n)
        if n < 0 or self.used + n > self.allowance:
            # the figure is what the whole load would need, not only the last step (a
            # thousandth tiny member must not read "would need 0.0 MiB")
            total = self.used + max(n, 0)
            fail(f"{what} would need {mib(max(n, 0))}"
                 + (f" ({mib(total)} for the whole load)" if mib(total) != mib(max(n, 0))
                    else "")
                 + f", over {self.describe()}; raise max_bytes (FEATAGG_MAX_LOAD_MB) "
                 "to load it")
        self.used += n

    @fill_doc
    def check_dims(self, dims: Dict[str, int], fail: Fail, bytes_per_entry: int = 8) -> None:
        """Refuse declared dimensions before anything of their size is allocated.

        Each must be within ``max_dim`` (when set), and ``bytes_per_entry`` per row + column
        (an index pointer and a per-column array) must fit in the budget.

        Parameters
        ----------
        dims : dict of str to int
            What -> declared size (e.g. ``{"rows": n, "features": d}``).
        {fail}
        bytes_per_entry : int, default=8
            Bytes allocated per row or column.
        """
        for what, size in dims.items():
            size = int(size)
            if self.max_dim is not None and size > self.max_dim:
                fail(f"the file declares {size:,} {what}; loads here are limited to "
                     f"{self.max_dim:,}")
        total = bytes_per_entry * sum(int(s) for s in dims.values())
        if total > self.allowance:
            parts = ", ".join(f"{int(s):,} {w}" for w, s in dims.items())
            fail(f"the file declares {parts}: arrays of that size alone would need "
                 f"{mib(total)}, over {self.describe()}")


# ------------------------------------------------------------------------------ zip
#: Python objects (a ``ZipInfo`` and its name) per member when a central directory is read
ZIP_MEMBER_BYTES = 1 << 10
#: the most members an archive may declare before its central directory is parsed
MAX_ZIP_MEMBERS = 200_000


def zip_member_count(head_or_file) -> Optional[int]:
    """The number of members a zip archive declares, from its end-of-central-directory
    record (zip64 included), without parsing the central directory.

    Parameters
    ----------
    head_or_file : bytes or binary file
        The archive's bytes, or an open file positioned anywhere (only its last 64 kB and
        the zip64 record are read).

    Returns
    -------
    int or None
        The declared count, or None when no end record is found (not a zip archive).
    """
    found = zip_directory(head_or_file)
    return None if found is None else found[0]


def zip_directory(head_or_file) -> Optional[tuple]:
    """What a zip archive's end record declares: ``(members, directory offset, directory
    size)`` (zip64 included), read from its last 64 kB without parsing the directory.

    Parameters
    ----------
    head_or_file : bytes or binary file
        The archive's bytes, or an open file.

    Returns
    -------
    tuple of int or None
        ``(count, offset, size)``, or None when no end record is found.
    """
    if isinstance(head_or_file, (bytes, bytearray, memoryview)):
        data = memoryview(head_or_file)
        size = len(data)

        def read_at(pos, n):
            return bytes(data[max(pos, 0):max(pos, 0) + n])
    else:
        fh = head_or_file
        fh.seek(0, os.SEEK_END)
        size = fh.tell()

        def read_at(pos, n):
            fh.seek(max(pos, 0))
            return fh.read(n)
    tail_start = max(0, size - (22 + 0xFFFF))
    tail = read_at(tail_start, size - tail_start)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    count = int.from_bytes(tail[at + 10:at + 12], "little")
    cd_size = int.from_bytes(tail[at + 12:at + 16], "little")
    cd_off = int.from_bytes(tail[at + 16:at + 20], "little")
    if count != 0xFFFF and cd_off != 0xFFFFFFFF:
        return count, cd_off, cd_size
    loc = tail.rfind(b"PK\x06\x07", 0, at)
    if loc < 0 or len(tail) - loc < 20:
        return count, cd_off, cd_size
    off = int.from_bytes(tail[loc + 8:loc + 16], "little")
    rec = read_at(off, 56)
    if len(rec) < 56 or rec[:4] != b"PK\x06\x06":
        return count, cd_off, cd_size
    return (int.from_bytes(rec[32:40], "little"), int.from_bytes(rec[48:56], "little"),
            int.from_bytes(rec[40:48], "little"))


@fill_doc
def open_zip(data: bytes, fail: Fail, what: str = "archive", budget: Optional[Budget] = None,
             max_members: int = MAX_ZIP_MEMBERS) -> zipfile.ZipFile:
    """``data`` as a checked zip archive.

    Every member stored or deflated, unencrypted, named once and of a declared size within
    2**40; else ``fail``.

    Parameters
    ----------
    data : bytes
        The archive's bytes.
    {fail}
    what : str, default="archive"
        What the file is, for messages.
    budget : Budget, optional
        When given, the members the archive declares are charged to it
        (:data:`ZIP_MEMBER_BYTES` each) before its central directory is parsed.
    max_members : int, default=MAX_ZIP_MEMBERS
        The most members the archive may declare (counted from its end record first).

    Returns
    -------
    zipfile.ZipFile
        The open archive.
    """
    count = zip_member_count(data)
    if count is not None:
        if count > max_members:
            fail(f"the {what} declares {count:,} members; at most {max_members:,} are read")
        if budget is not None:
            budget.charge(count * ZIP_MEMBER_BYTES,
                          f"the {what}'s directory of {count:,} members", fail)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except Exception:  # noqa: BLE001 - BadZipFile, LargeZipFile, struct/Value errors
        # the caller's ``fail`` names the file and what it should have been; the
        # exception's class name (BadZipFile, ...) means nothing to the person who chose
        # the file
        fail("not a zip archive, or cut short")
    seen = set()
    for info in infos:
        name = info.filename
        if name in seen:
            zf.close()
            fail(f"member {name!r} appears twice in the {what}")
        seen.add(name)
        if info.flag_bits & 0x41:          # bit 0: encrypted, bit 6: strong encryption
            zf.close()
            fail(f"member {name!r} is encrypted")
        if info.compress_type not in _ALLOWED_COMPRESSION:
            zf.close()
            fail(f"member {name!r} uses compression method {info.compress_type} "
                 "(only stored and deflated members are read)")
        if info.file_size < 0 or info.file_size > (1 << 40):
            zf.close()
            fail(f"member {name!r} declares an implausible size")
    return zf


@fill_doc
def member_info(zf: zipfile.ZipFile, name: str) -> Optional[zipfile.ZipInfo]:
    """The ``ZipInfo`` of member ``name``, or None when there is none.

    Parameters
    ----------
    {zip_member}

    Returns
    -------
    zipfile.ZipInfo or None
        Its entry.
    """
    try:
        return zf.getinfo(name)
    except KeyError:
        return None


@fill_doc
def read_member(zf: zipfile.ZipFile, name: str, budget: Budget, fail: Fail,
                limit: Optional[int] = None) -> bytes:
    """The bytes of member ``name``, inflated within the budget.

    Its declared size is checked against ``limit`` and charged to ``budget`` before
    inflating; inflation stops at that size (and the CRC is checked).

    Parameters
    ----------
    {zip_member}
    {budget}
    {fail}
    limit : int, optional
        The most bytes this member may have.

    Returns
    -------
    bytes
        The member's content.
    """
    info = member_info(zf, name)
    if info is None:
        fail(f"member {name!r} is missing")
    if limit is not None and info.file_size > limit:
        fail(f"member {name!r} is {mib(info.file_size)}, over its limit of {mib(limit)}")
    budget.charge(info.file_size, f"member {name!r}", fail)
    out = bytearray(info.file_size)
    view = memoryview(out)
    pos = 0
    try:
        with zf.open(info) as fh:
            while pos < info.file_size:
                chunk = fh.read(min(_CHUNK, info.file_size - pos))
                if not chunk:
                    break
                view[pos:pos + len(chunk)] = chunk
                pos += len(chunk)
            if pos == info.file_size:
                fh.read(1)                 # reach the end: the CRC is checked there
    except Exception as exc:  # noqa: BLE001 - zlib.error, BadZipFile (CRC), EOFError, ...
        # zipfile's own words for a CRC mismatch are "Bad CRC-32 for file 'X_data.npy'"
        crc = isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc)
        fail(f"member {name!r} is damaged "
             f"({'its checksum does not match its content' if crc else reason(exc)})")
    if pos != info.file_size:
        fail(f"member {name!r} is truncated")
    return bytes(out)


@fill_doc
def read_npy_member(zf: zipfile.ZipFile, name: str, budget: Budget, fail: Fail,
                    kinds: str = "biuf") -> np.ndarray:
    """The array of ``.npy`` member ``name``, never unpickled.

    The header is read first (at most 10 kB, parsed by numpy's header reader); the dtype
    kind must be in ``kinds`` (no object, structured or sub-array dtypes), and
    shape x itemsize must equal the bytes that follow the header in the member, so a
    header cannot declare more than the member holds. The member's declared size is
    charged to ``budget`` before its data are inflated.

    Parameters
    ----------
    {zip_member}
    {npy_checks}

    Returns
    -------
    ndarray
        The array.
    """
    info = member_info(zf, name)
    if info is None:
        fail(f"member {name!r} is missing")
    try:
        with zf.open(info) as fh:
            head = fh.read(min(info.file_size, _NPY_MAX_HEADER + 16))
    except Exception as exc:  # noqa: BLE001
        fail(f"member {name!r} is damaged ({reason(exc)})")
    shape, fortran, dtype, offset = _npy_header(head, name, fail)
    count = _npy_count(shape, dtype, kinds, info.file_size - offset, f"member {name!r}", fail)
    raw = read_member(zf, name, budget, fail)
    buf = bytearray(raw[offset:])
    del raw
    try:
        arr = np.frombuffer(buf, dtype=dtype, count=count)
        return arr.reshape(shape, order="F" if fortran else "C")
    except Exception as exc:  # noqa: BLE001
        fail(f"member {name!r} is unreadable ({reason(exc)})")


@fill_doc
def read_npy_bytes(raw: bytes, budget: Budget, fail: Fail, kinds: str = "biuf") -> np.ndarray:
    """The array of a whole ``.npy`` file held in ``raw``.

    Same checks as :func:`read_npy_member`: no pickles, the header may not declare more
    than the file holds.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    {npy_checks}

    Returns
    -------
    ndarray
        The array.
    """
    shape, fortran, dtype, offset = _npy_header(raw[:_NPY_MAX_HEADER + 16], "<.npy>", fail)
    count = _npy_count(shape, dtype, kinds, len(raw) - offset, "the .npy array", fail)
    budget.charge(len(raw) - offset, "the .npy array", fail)
    arr = np.frombuffer(bytearray(raw[offset:]), dtype=dtype, count=count)
    return arr.reshape(shape, order="F" if fortran else "C")


def _npy_count(shape, dtype, kinds: str, data_bytes: int, what: str, fail: Fail) -> int:
    """Number of items of a ``.npy`` header, after refusing object, structured and
    sub-array dtypes and kinds outside ``kinds``, and a shape x itemsize that is not
    exactly the ``data_bytes`` that follow the header."""
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None \
            or dtype.kind not in kinds:
        fail(f"{what} has dtype {dtype}; only "
             f"{'/'.join(_KIND_NAMES[k] for k in kinds)} arrays are read")
    count = 1
    for s in shape:
        count *= int(s)
    if count * dtype.itemsize != data_bytes:
        fail(f"{what}: its header declares shape {tuple(shape)} of {dtype} "
             f"({count * dtype.itemsize:,} bytes) but {max(data_bytes, 0):,} bytes follow it")
    return count


_KIND_NAMES = {"b": "bool", "i": "integer", "u": "unsigned", "f": "float", "U": "unicode",
               "S": "bytes"}


def _npy_header(head: bytes, name: str, fail: Fail):
    fmt = np.lib.format
    bio = io.BytesIO(head)
    readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
    try:
        version = fmt.read_magic(bio)
    except Exception:  # noqa: BLE001 - its text is about numpy's parser, not the file
        fail(f"member {name!r} is not a .npy array")
    if version not in readers:
        fail(f"member {name!r}: unsupported .npy format version {version}")
    try:
        shape, fortran, dtype = readers[version](bio, max_header_size=_NPY_MAX_HEADER)
    except Exception:  # noqa: BLE001 - ValueError, SyntaxError, RecursionError, ...
        fail(f"member {name!r} has an unreadable .npy header")
    if any(int(s) < 0 for s in shape):
        fail(f"member {name!r}: negative dimension in shape {shape}")
    return tuple(int(s) for s in shape), bool(fortran), dtype, bio.tell()


# ------------------------------------------------------------------------------ JSON
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def json_depth_ok(text: bytes, max_depth: int) -> bool:
    """Whether the brackets of a JSON document nest at most ``max_depth`` deep.

    Brackets inside strings do not count. Linear: strings are cut out by a regular
    expression without backtracking, then the depth is a cumulative sum.

    Parameters
    ----------
    text : bytes
        The document.
    max_depth : int
        The deepest nesting allowed.

    Returns
    -------
    bool
        True when within the depth.
    """
    bare = np.frombuffer(_JSON_STRING.sub(b'""', text), np.uint8)
    # in slices of 1 MiB: the temporaries of the whole document at once cost ~16 bytes a
    # byte (60 MB of whitespace took 1.17 GB)
    depth = 0
    for start in range(0, bare.size, _CHUNK):
        part = bare[start:start + _CHUNK]
        step = (((part == 0x5B) | (part == 0x7B)).astype(np.int32)
                - ((part == 0x5D) | (part == 0x7D)).astype(np.int32))
        run = np.cumsum(step, dtype=np.int64)
        if depth + int(run.max()) > max_depth:
            return False
        depth += int(run[-1])
    return True


@fill_doc
def loads_json(text: bytes, what: str, fail: Fail, max_depth: int = 64):
    """``json.loads`` of ``text`` after a nesting check; any failure goes to ``fail``.

    Parameters
    ----------
    text : bytes
        The document.
    what : str
        What it is, for the message.
    {fail}
    max_depth : int, default=64
        The deepest nesting allowed.

    Returns
    -------
    object
        The decoded JSON value.
    """
    if not json_depth_ok(text, max_depth):
        fail(f"{what} nests deeper than {max_depth} levels")
    try:
        return json.loads(text.decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - JSONDecodeError, UnicodeDecodeError, Recursion
        fail(f"{what} is not valid JSON ({reason(exc)})")


# ------------------------------------------------------------------------------ XML
class _Refused(Exception):
    pass


@fill_doc
def parse_xml_safely(raw: bytes, fail: Fail, start=None, end=None, what: str = "XML") -> None:
    """Parse ``raw`` with expat, refusing a DOCTYPE, entity or notation declarations.

    Also external entity references, in whatever encoding the document is written.
    Malformed XML goes to ``fail`` with the line expat reports.

    Parameters
    ----------
    raw : bytes
        The document.
    {fail}
    start : callable, optional
        ``start(tag, attrs)`` receives each element's start (namespaces as ``{uri}tag``).
    end : callable, optional
        ``end(tag)`` receives each element's end.
    what : str, default="XML"
        What the document is, for messages.
    """
    from xml.parsers import expat

    p = expat.ParserCreate(namespace_separator="}")

    def refuse(*_args):
        raise _Refused("XML with a DTD or entity declarations is refused")

    p.StartDoctypeDeclHandler = refuse
    p.EntityDeclHandler = refuse
    p.UnparsedEntityDeclHandler = refuse
    p.NotationDeclHandler = refuse
    p.ExternalEntityRefHandler = refuse
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    if start is not None:
        p.StartElementHandler = lambda tag, attrs: start(_ns(tag), attrs)
    if end is not None:
        p.EndElementHandler = lambda tag: end(_ns(tag))
    try:
        p.Parse(raw, True)
    except _Refused as exc:
        fail(str(exc))
    except expat.ExpatError as exc:
        fail(f"malformed {what} ({expat.errors.messages.get(exc.code, exc)} at line "
             f"{exc.lineno})")
    except (ValueError, LookupError) as exc:
        # expat refuses some declared encodings outright ("multi-byte encodings are not
        # supported" for UTF-16-LE/BE, UTF-32): the fault is this document's, named by the
        # caller's ``fail``, not the file it belongs to
        fail(f"{what} in an encoding that cannot be read ({reason(exc)}); save it as UTF-8")


def _ns(tag: str) -> str:
    if "}" in tag:
        uri, local = tag.rsplit("}", 1)
        return "{" + uri + "}" + local
    return tag


def iter_names(zf: zipfile.ZipFile) -> List[str]:
    """The member names of an archive, in order.

    Parameters
    ----------
    zf : zipfile.ZipFile
        An archive opened by :func:`open_zip`.

    Returns
    -------
    list of str
        The names.
    """
    return [i.filename for i in zf.infolist()]
