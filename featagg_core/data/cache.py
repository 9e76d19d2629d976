"""A server-side data folder: its listing, safe paths into it, a memory-mapped npz cache of
its large multi-label files, and a byte-bounded store that shares opened datasets.

No streamlit here (``featagg_app/intake/data_folder.py`` is the dashboard side). The dashboard's
``FEATAGG_DATA_DIR`` names the folder; a person picks a file by its path *relative to the
folder* (``"corel5k/train.txt"``), which is all a browser ever sees of the server's paths::

    folder = DataFolder("/srv/datasets")
    folder.list_files()             # [FolderFile("corel5k/train.txt", size, mtime_ns, kind)]
    data = folder.load("corel5k/train.txt", progress=report)      # MultiLabelData
    store = DatasetStore(max_bytes=4 << 30)
    data = store.get(folder.cache_key("corel5k/train.txt"),
                     lambda: folder.load("corel5k/train.txt"))

**Paths.** :meth:`DataFolder.resolve` refuses absolute paths, ``..``, hidden components,
NUL bytes, and anything whose real path (symlinks followed) is outside the folder or is not
a regular file. The listing walks the folder without following directory symlinks and
leaves out hidden entries, the cache folders and files no reader takes.

**The cache.** A multi-label file of at least :data:`CONVERT_MIN_BYTES` (XC text,
svmlight, ARFF, a compressed npz) is parsed once and written as an *uncompressed* npz
(``np.savez``: every member stored, so each array is one contiguous run of the file)
beside it, in ``.featagg-cache/<name>.npz``; when that folder cannot be written, under
the user's cache (``FEATAGG_CACHE_DIR``, else ``$XDG_CACHE_HOME/featagg/data-cache``, else
``~/.cache/featagg/data-cache``). The write is atomic (temporary file + ``os.replace``), so
two servers converting the same file at once both end with a whole cache. The cache
records the size and modification time of its source (and of the companion files it
read: the ARFF's XML, the test part), and is rebuilt when any of them changes. Opening it
maps the arrays read-only (:func:`open_npz_cache`; the file's layout is in
:mod:`featagg_core.data.mapped_npz`): no parse, no copy, and the operating system's page cache
holds one copy for every process that opens it. A cache file that does not check out
(truncated, foreign, another version) is rebuilt, never trusted.

**Companions.** ``<stem>.xml`` beside an ARFF is its MULAN label header. A file whose name
contains ``train`` gets the sibling with ``test`` in its place (``bibtex_train.txt`` →
``bibtex_test.txt``, ``corel5k/train.arff`` → ``corel5k/test.arff``) as its own test part.

**Sharing.** :class:`DatasetStore` keeps opened datasets keyed on (real path, size,
mtime, options, companions) up to ``max_bytes`` (least recently used out first; the bytes
of mapped arrays count too, since they become resident when used) and loads each key once
even when several threads ask for it together. The datasets it hands out are shared
read-only: mapped arrays are not writeable.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core.data.mapped_npz import (
    CACHE_VERSION,
    mapped_file_changed,
    open_npz_cache,
    write_npz_cache,
)
from featagg_core.data._containers import DatasetError
from featagg_core.utils.docstrings import fill_doc

__all__ = ["DataFolder", "FolderFile", "DatasetStore", "CACHE_DIR_NAME",
           "CONVERT_MIN_BYTES", "CACHE_VERSION", "data_nbytes", "write_npz_cache",
           "open_npz_cache", "user_cache_dir"]

#: the cache folder beside the sources (hidden: the listing never shows it)
CACHE_DIR_NAME = ".featagg-cache"
#: multi-label files from this size on get a disk cache (smaller ones parse quickly, see
#: benchmarks/results/data_notes.md; caching them would only litter the folder)
CONVERT_MIN_BYTES = 4 << 20

#: the largest ``meta.npy`` a cache file of ours has (a bigger one is not read)
_MAX_META_BYTES = 1 << 20

_MULTILABEL_EXT = {".svm", ".svmlight", ".libsvm", ".arff"}
_GRAPH_EXT = {".edges", ".edgelist", ".el", ".graphml", ".gml", ".mat"}
_TABLE_EXT = {".csv", ".tsv", ".parquet"}


def _ext(name: str) -> str:
    return os.path.splitext(name.lower())[1]


@dataclass(frozen=True)
class FolderFile:
    """One dataset file of a :class:`DataFolder` (what the sidebar lists).

    Parameters
    ----------
    relpath : str
        The path relative to the folder with ``/`` separators (the only path a browser
        user sees).
    size : int
        Bytes of the file.
    mtime_ns : int
        Its modification time (ns).
    kind : str
        "multilabel" | "graph" | "table".
    cached : bool
        True when a fresh disk cache of it exists.
    companions : tuple of (str, str)
        ``(role, relpath)`` pairs, role "xml" or "test".
    """
    relpath: str
    size: int
    mtime_ns: int
    kind: str
    cached: bool = False
    companions: Tuple[Tuple[str, str], ...] = ()

    @property
    def size_text(self) -> str:
        """The size for people: "133 MB", "12.4 MB", "840 kB".

        Returns
        -------
        str
        """
        s = float(self.size)
        if s >= 100e6:
            return f"{s / 1e6:,.0f} MB"
        if s >= 1e6:
            return f"{s / 1e6:.1f} MB"
        return f"{max(s / 1e3, 0.1):.0f} kB" if s >= 1e3 else f"{int(s)} B"

    @property
    def label(self) -> str:
        """What the sidebar shows: "corel5k/train.arff · 1.2 MB (+ XML, test part)".

        Returns
        -------
        str
        """
        extra = {"xml": "XML", "test": "test part"}
        comp = ", ".join(extra[r] for r, _ in self.companions if r in extra)
        return f"{self.relpath} · {self.size_text}" + (f" (+ {comp})" if comp else "")


def _is_utf8(name: str) -> bool:
    """Whether a file name (str, undecodable bytes as surrogates) is valid UTF-8 text."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _escaped(name: str) -> str:
    """A file name with its undecodable bytes written as ``\\xff`` (printable anywhere)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def user_cache_dir() -> str:
    """Where caches go when a data folder cannot be written: ``FEATAGG_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/featagg/data-cache``, else ``~/.cache/featagg/data-cache``.

    Returns
    -------
    str
        The folder (read from the environment at each call; not created here).
    """
    explicit = os.environ.get("FEATAGG_CACHE_DIR", "").strip()
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "featagg", "data-cache")


def data_nbytes(data) -> int:
    """Bytes of the arrays a dataset holds (sparse parts, names counted roughly): what a
    :class:`DatasetStore` charges for keeping it.

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
        The dataset (any object with some of their attributes).

    Returns
    -------
    int
        The estimate in bytes.
    """
    total = 0
    for attr in ("X", "Y", "X_test", "Y_test", "A"):
        M = getattr(data, attr, None)
        if M is not None and sp.issparse(M):
            M = M.tocsr()
            total += M.data.nbytes + M.indices.nbytes + M.indptr.nbytes
    for attr in ("feature_names", "label_names", "class_names"):
        names = getattr(data, attr, None)
        if names is not None:
            total += 64 * len(names)
    y = getattr(data, "y", None)
    if y is not None:
        total += np.asarray(y).nbytes
    table = getattr(data, "table", None)
    if table is not None:
        try:
            total += int(table.memory_usage(deep=True).sum())
        except Exception:  # noqa: BLE001 - an estimate is enough
            total += 64 * table.size
    labels = getattr(data, "labels", None)
    if labels is not None:
        total += np.asarray(labels).nbytes
    return int(total)


# ---------------------------------------------------------------------------
# the folder
# ---------------------------------------------------------------------------

class DataFolder:
    """A folder of dataset files on the server (see the module docstring).

    Parameters
    ----------
    root : str
        The folder.
    cache_dir : str, optional
        Where caches go when a file's own folder cannot be written (default
        :func:`user_cache_dir`).
    convert_min_bytes : int
        Multi-label files from this size on get a disk cache.

    Raises
    ------
    DatasetError
        When ``root`` is not an existing folder.
    """

    def __init__(self, root: str, cache_dir: Optional[str] = None,
                 convert_min_bytes: int = CONVERT_MIN_BYTES):
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise DatasetError("the data folder does not exist or is not a folder",
                               path=os.fspath(root))
        self.root = real
        self.cache_dir = cache_dir or user_cache_dir()
        self.convert_min_bytes = int(convert_min_bytes)

    # -- paths
    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)

    @fill_doc
    def resolve(self, relpath: str) -> str:
        """The real path of the folder's file ``relpath`` (``/``-separated, relative).

        Parameters
        ----------
        {relpath}

        Returns
        -------
        str
            Its real path on the server (symlinks followed).

        Raises
        ------
        DatasetError
            (naming ``relpath`` only) for an absolute path, ``..``, a hidden component, a
            symlink that leads out of the folder, or anything that is not a readable
            regular file in it.
        """
        rel = str(relpath)
        bad = DatasetError("not a file of the data folder", path=rel[:200])
        if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/") or \
                os.path.isabs(rel) or (len(rel) > 1 and rel[1] == ":"):
            raise bad
        parts = rel.split("/")
        if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise bad
        real = os.path.realpath(os.path.join(self.root, *parts))
        if not self._inside(real) or real == self.root:
            raise bad
        try:
            st = os.stat(real)
        except OSError:
            raise bad from None
        if not stat.S_ISREG(st.st_mode) or not os.access(real, os.R_OK):
            raise bad
        return real

    def _stat(self, relpath: str):
        real = self.resolve(relpath)
        st = os.stat(real)
        return real, st

    # -- listing
    def list_files(self, max_files: int = 2000, max_depth: int = 4,
                   skipped: Optional[List[str]] = None) -> List[FolderFile]:
        """The dataset files of the folder, sorted by path: readable regular files (or
        symlinks to files inside the folder) that a reader takes, at most ``max_depth``
        folders deep, at most ``max_files``. Hidden entries and cache folders are left
        out; so are ``.xml`` label headers (they are an ARFF's companion).

        Nothing is read from a file but its name and ``stat`` (the kind of an npz comes
        from its member names). A file or folder whose name is not valid UTF-8 (bytes such
        as ``\\xff\\xfe`` a browser cannot show or send back) is left out, its name
        escaped into ``skipped``; every other file stays listed.

        Parameters
        ----------
        max_files : int
            Stop after this many files.
        max_depth : int
            Look at most this many folders deep (1 = the folder itself).
        skipped : list of str, optional
            Receives the escaped relative names of the entries left out for their name.

        Returns
        -------
        list of FolderFile
            Sorted by ``relpath``.
        """
        out: List[FolderFile] = []
        left_out = skipped if skipped is not None else []
        root_depth = self.root.rstrip(os.sep).count(os.sep)
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            depth = dirpath.rstrip(os.sep).count(os.sep) - root_depth
            keep = []
            for d in sorted(dirnames):
                if d.startswith(".") or depth + 1 >= max_depth:
                    continue
                rel_dir = os.path.relpath(os.path.join(dirpath, d), self.root)
                if _is_utf8(rel_dir):
                    keep.append(d)
                else:
                    left_out.append(_escaped(rel_dir) + "/")
            dirnames[:] = keep
            for fn in sorted(filenames):
                if fn.startswith(".") or _ext(fn) == ".xml":
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), self.root).replace(os.sep, "/")
                if not _is_utf8(rel):
                    left_out.append(_escaped(rel))
                    continue
                entry = self.describe(rel, quiet=True)
                if entry is not None:
                    out.append(entry)
                if len(out) >= max_files:
                    return sorted(out, key=lambda f: f.relpath)
        return sorted(out, key=lambda f: f.relpath)

    @fill_doc
    def describe(self, relpath: str, quiet: bool = False) -> Optional[FolderFile]:
        """The :class:`FolderFile` of ``relpath``.

        Parameters
        ----------
        {relpath}
        quiet : bool
            Return None instead of raising when it is not a dataset file of the folder.

        Returns
        -------
        FolderFile or None
            None only with ``quiet``.

        Raises
        ------
        DatasetError
            Without ``quiet``, when ``relpath`` is not a dataset file of the folder.
        """
        try:
            real, st = self._stat(relpath)
            kind = self._kind(real)
        except (DatasetError, OSError):
            if quiet:
                return None
            raise
        if kind is None:
            if quiet:
                return None
            raise DatasetError("not a dataset file (unknown format)", path=relpath)
        comps = tuple(sorted(self.companions(relpath, kind).items()))
        entry = FolderFile(relpath, int(st.st_size), int(st.st_mtime_ns), kind,
                           companions=comps)
        cached = kind == "multilabel" and self._fresh_cache(entry) is not None
        return FolderFile(relpath, int(st.st_size), int(st.st_mtime_ns), kind, cached, comps)

    @staticmethod
    def _kind(real: str) -> Optional[str]:
        ext = _ext(real)
        if ext in _MULTILABEL_EXT:
            return "multilabel"
        if ext in _GRAPH_EXT:
            return "graph"
        if ext in _TABLE_EXT:
            return "table"
        if ext == ".npz":
            # from the member names alone: the listing never inflates a member (a kind.npy
            # of 3 GB cost 3 GB on every listing)
            from featagg_core.data.npz import _npz_kind
            return _npz_kind(real)
        if ext == ".txt":
            try:
                with open(real, "rb") as fh:
                    head = fh.read(4096)
            except OSError:
                return None
            first = head.lstrip().split(b"\n", 1)[0].strip()
            if head.lstrip()[:1] == b"%" or first.lower().startswith(b"@relation"):
                return "multilabel"
            parts = first.split()
            if b":" in head or (len(parts) == 3 and all(p.isdigit() for p in parts)):
                return "multilabel"
            return "graph" if len(parts) >= 2 else None
        return None

    @fill_doc
    def companions(self, relpath: str, kind: Optional[str] = None) -> Dict[str, str]:
        """Companion files of ``relpath`` in the folder: ``"xml"`` (``<stem>.xml`` beside
        an ARFF) and ``"test"`` (the sibling with ``test`` for ``train`` in its name, of the
        same format) — only those that exist.

        Parameters
        ----------
        {relpath}
        kind : str, optional
            Its kind when known; only multi-label files have companions.

        Returns
        -------
        dict
            role (``"xml"``, ``"test"``) -> relpath.
        """
        out = {}
        if kind not in (None, "multilabel"):
            return out
        head, _, base = relpath.rpartition("/")
        prefix = head + "/" if head else ""
        stem, ext = os.path.splitext(base)
        if ext.lower() == ".arff":
            for cand in (stem + ".xml", stem.replace("-train", "").replace("_train", "")
                         .replace("train", "") + ".xml"):
                if cand != ".xml" and self._exists(prefix + cand):
                    out["xml"] = prefix + cand
                    break
        if "train" in base:
            test = prefix + base.replace("train", "test")
            if test != relpath and self._exists(test):
                out["test"] = test
        return out

    def _exists(self, relpath: str) -> bool:
        try:
            self.resolve(relpath)
            return True
        except DatasetError:
            return False

    # -- the cache
    def _cache_paths(self, real: str) -> List[str]:
        """Where the cache of ``real`` may be: beside it first, then the user cache."""
        base = os.path.basename(real)
        beside = os.path.join(os.path.dirname(real), CACHE_DIR_NAME, base + ".npz")
        tag = hashlib.sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return [beside, os.path.join(self.cache_dir, f"{tag}-{base}.npz")]

    def _signature(self, entry: FolderFile) -> dict:
        """What the cache of ``entry`` records of its sources (sizes, mtimes, options)."""
        sig = {"source": [entry.relpath, entry.size, entry.mtime_ns]}
        for role, rel in entry.companions:
            st = os.stat(self.resolve(rel))
            sig[role] = [rel, int(st.st_size), int(st.st_mtime_ns)]
        return sig

    def _fresh_cache(self, entry: FolderFile, options: Optional[dict] = None) -> Optional[str]:
        real = self.resolve(entry.relpath)
        try:
            want = dict(self._signature(entry), options=options or {})
        except (OSError, DatasetError):
            return None
        for path in self._cache_paths(real):
            try:
                with zipfile.ZipFile(path) as zf:
                    if zf.getinfo("meta.npy").file_size > _MAX_META_BYTES:
                        continue         # not one of ours: never inflated
                    with zf.open("meta.npy") as fh:
                        meta = json.loads(str(np.lib.format.read_array(
                            fh, allow_pickle=False)[()]))
            except Exception:  # noqa: BLE001 - missing or unreadable: not fresh
                continue
            if meta.get("version") == CACHE_VERSION and all(
                    meta.get(k) == v for k, v in want.items()):
                return path
        return None

    @fill_doc
    def cache_key(self, relpath: str, options: Optional[dict] = None) -> tuple:
        """The key a :class:`DatasetStore` keeps ``relpath`` (opened with ``options``)
        under: real path, size, mtime and those of its companions.

        Parameters
        ----------
        {relpath}
        options : dict, optional
            The reader options it is opened with (as for :meth:`load`).

        Returns
        -------
        tuple
            ``(real path, sources' signature as JSON, options as JSON)``.

        Raises
        ------
        DatasetError
            When ``relpath`` is not a dataset file of the folder.
        """
        entry = self.describe(relpath)
        sig = self._signature(entry)
        return (self.resolve(relpath), json.dumps(sig, sort_keys=True),
                json.dumps(options or {}, sort_keys=True, default=str))

    @fill_doc
    def cache_location(self, relpath: str) -> Optional[str]:
        """The fresh cache file of ``relpath`` on the server (server side only: never shown
        in a browser).

        Parameters
        ----------
        {relpath}

        Returns
        -------
        str or None
            The cache's path, or None when there is no fresh one.

        Raises
        ------
        DatasetError
            When ``relpath`` is not a dataset file of the folder.
        """
        return self._fresh_cache(self.describe(relpath))

    # -- loading
    @fill_doc
    def load(self, relpath: str, *, options: Optional[dict] = None,
             progress: Optional[Callable[[float, str], None]] = None):
        """Open the folder's file ``relpath`` as a dataset.

        ``options``: reader options a person chose (``n_labels`` for an ARFF without XML,
        ``label`` for a table). Multi-label files of at least ``convert_min_bytes`` are
        opened from their memory-mapped cache, built first when missing or stale;
        everything else is parsed by the readers. ``progress(fraction, message)`` is
        called between the steps (it may raise to cancel). The dataset is named by
        ``relpath`` and every message names ``relpath``, never the server path.

        Parameters
        ----------
        {relpath}
        options : dict, optional
            Reader options (``n_labels``, ``label``).
        progress : callable, optional
            ``progress(fraction, message)``, called between the steps.

        Returns
        -------
        MultiLabelData, GraphData or CategoricalData
            The dataset, named ``relpath``.

        Raises
        ------
        DatasetError
            For a path outside the folder, an unknown format or a malformed file.
        """
        report = progress or (lambda f, m: None)
        options = dict(options or {})
        entry = self.describe(relpath)
        if entry.kind == "multilabel" and entry.size >= self.convert_min_bytes:
            path = self._fresh_cache(entry, options)
            if path is not None:
                report(0.1, f"Opening the cache of {relpath}")
                try:
                    data, _ = open_npz_cache(path)
                except (OSError, ValueError):
                    data = None          # damaged: rebuilt below
                if data is not None:
                    return self._finish(data, entry, report)
        data = self._parse(entry, options, report)
        if entry.kind == "multilabel" and entry.size >= self.convert_min_bytes:
            report(0.8, f"Writing the cache of {relpath}")
            meta = dict(self._signature(entry), options=options)
            for path in self._cache_paths(self.resolve(relpath)):
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    write_npz_cache(data, path, meta)
                except OSError:
                    continue             # read-only: try the user's cache
                try:
                    data, _ = open_npz_cache(path)   # file-backed from now on
                except (OSError, ValueError):
                    pass
                break
        return self._finish(data, entry, report)

    def _finish(self, data, entry: FolderFile, report):
        data.name = entry.relpath
        data.source = f"data folder: {entry.relpath}"
        report(0.95, f"Fingerprinting {entry.relpath}")
        _ = data.fingerprint             # hashed once here, not in a page's script run
        report(1.0, f"Opened {entry.relpath}")
        return data

    def _read(self, relpath: str):
        from featagg_core.data import _NamedBytes
        with open(self.resolve(relpath), "rb") as fh:
            raw = fh.read()
        return _NamedBytes(raw, relpath)

    def _parse(self, entry: FolderFile, options: dict, report):
        from featagg_core import data as fd
        comps = dict(entry.companions)

        def limits(reader):
            # the server's own files carry no upload cap: a reader that takes a load
            # budget (max_bytes) gets one as large as the machine's memory
            import inspect
            try:
                params = inspect.signature(reader).parameters
            except (TypeError, ValueError):
                return {}
            return {"max_bytes": _memory_bytes()} if "max_bytes" in params else {}

        report(0.05, f"Reading {entry.relpath} ({entry.size_text})")
        fh = self._read(entry.relpath)
        report(0.2, f"Parsing {entry.relpath}")
        try:
            if entry.kind == "multilabel":
                kw = {}
                if "xml" in comps:
                    kw["xml"] = self._read(comps["xml"])
                elif options.get("n_labels"):
                    kw["n_labels"] = int(options["n_labels"])
                if "test" in comps:
                    kw["test"] = self._read(comps["test"])
                return fd.load_dataset(fh, **kw, **limits(fd.load_dataset))
            if entry.kind == "graph":
                return fd.load_graph(fh, **limits(fd.load_graph))
            return fd.load_categorical(fh, label=options.get("label") or None,
                                       **limits(fd.load_categorical))
        except DatasetError:
            raise
        except MemoryError as exc:
            raise DatasetError("not enough memory to open this file",
                               path=entry.relpath) from exc


def _memory_bytes() -> int:
    """The machine's physical memory (the load budget of a data-folder file)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1 << 36


# ---------------------------------------------------------------------------
# the shared store
# ---------------------------------------------------------------------------

class DatasetStore:
    """Opened datasets shared by every session of a server, up to ``max_bytes``.

    A kept dataset whose memory-mapped cache file changed on disk since it was mapped
    (:func:`~featagg_core.data.mapped_npz.mapped_file_changed`: truncated, rewritten,
    removed) is dropped and loaded again instead of being handed out: reading a truncated
    mapping would kill the server with SIGBUS.

    ``get(key, load)`` returns the dataset kept under ``key`` or calls ``load()`` once
    (threads asking for the same key meanwhile wait for that one load), keeps it, and
    drops the least recently used others while the total is over ``max_bytes`` (the one
    just loaded stays even when it alone is larger). Thread-safe.

    Parameters
    ----------
    max_bytes : int
        The most bytes (:func:`data_nbytes`) kept at once.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._items: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._loading: Dict[tuple, threading.Lock] = {}
        #: datasets dropped because the cache file they map changed on disk
        self.dropped_changed = 0

    def peek(self, key):
        """The dataset kept under ``key``, or None (nothing is loaded).

        Parameters
        ----------
        key : hashable
            As given to :meth:`get` (e.g. :meth:`DataFolder.cache_key`).

        Returns
        -------
        object or None
            The dataset (now the most recently used), or None.
        """
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                if mapped_file_changed(hit[0]) is not None:
                    # its cache file changed under the mapping (truncated: touching the
                    # arrays would kill the process with SIGBUS): dropped, loaded afresh
                    del self._items[key]
                    self.dropped_changed += 1
                    return None
                self._items.move_to_end(key)
                return hit[0]
        return None

    def get(self, key, load: Callable[[], object]):
        """The dataset kept under ``key``, loaded by ``load()`` when it is not kept yet.

        Threads asking for the same key while it loads wait for that one load; then the
        least recently used others are dropped while the total is over ``max_bytes``.

        Parameters
        ----------
        key : hashable
            What the dataset is kept under (e.g. :meth:`DataFolder.cache_key`).
        load : callable
            ``load()`` returns the dataset; its exceptions propagate (nothing is kept).

        Returns
        -------
        object
            The dataset, shared: do not change it.
        """
        hit = self.peek(key)
        if hit is not None:
            return hit
        with self._lock:
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            hit = self.peek(key)
            if hit is not None:
                return hit
            try:
                data = load()
            finally:
                with self._lock:
                    self._loading.pop(key, None)
            size = data_nbytes(data)
            with self._lock:
                self._items[key] = (data, size)
                self._items.move_to_end(key)
                total = sum(s for _, s in self._items.values())
                while total > self.max_bytes and len(self._items) > 1:
                    _, (_, s) = self._items.popitem(last=False)
                    total -= s
        return data

    @property
    def nbytes(self) -> int:
        """Bytes of the datasets kept now.

        Returns
        -------
        int
        """
        with self._lock:
            return int(sum(s for _, s in self._items.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
