"""Export and import of fitted objects: one zip file, npz-style arrays + a JSON manifest.

Format (``format_version`` 1)
-----------------------------
A zip archive (stored, not compressed: the arrays are mostly incompressible floats and
this keeps loading a plain read) holding

* ``manifest.json`` – ``format`` ("featagg-artifact"), ``format_version``, ``class``
  (a short name from :data:`ARTIFACT_CLASSES`), ``params`` (``get_params()``), ``meta``
  (the estimator's JSON-serialisable fitted scalars), ``arrays`` (name → shape, dtype and
  SHA-256 of the raw bytes), ``library`` versions, ``dataset_fingerprint``, ``metrics``
  and ``created`` (UTC, ISO 8601);
* ``arrays/<name>.npy`` – one ``.npy`` file per array, written and read with
  ``allow_pickle=False``.

Loading never unpickles and never imports a module named by the file: the class is looked
up in the fixed table :data:`ARTIFACT_CLASSES`. Every array is checked against the manifest
(presence, shape, dtype, checksum) before the estimator is rebuilt, so truncated, tampered
or mismatched files are refused with an :class:`ArtifactError` that says what is wrong.

Estimators take part through two methods (see docs/CONVENTIONS.md)::

    obj._artifact_state() -> (meta: dict, arrays: dict[str, np.ndarray])
    cls._from_artifact_state(params, meta, arrays) -> fitted estimator
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import re
import zipfile
from typing import Any, Dict, Optional, Tuple

import numpy as np

from featagg_core.artifacts.checks.checker import validate_state
from featagg_core.artifacts.checks.table import CHECKS
from featagg_core.artifacts.registry import ArtifactError, artifact_class, artifact_classes
from featagg_core.utils.bounded import (
    Budget,
    iter_names,
    loads_json,
    member_info,
    open_zip,
    read_member,
    read_npy_member,
    reason,
    zip_directory,
    zip_member_count,
)
from featagg_core.utils.docstrings import fill_doc

FORMAT = "featagg-artifact"
FORMAT_VERSION = 1

#: short class name -> module holding it (:mod:`featagg_core.artifacts.registry`). Only these
#: classes can be loaded.
ARTIFACT_CLASSES: Dict[str, str] = artifact_classes()

# Bounds of the JSON members (manifest.json, bundle.json): size and bracket nesting.
# (The largest manifest featagg writes is tens of kB; a 60 MB one of whitespace cost
# 1.17 GB to check before these bounds.)
_MAX_MANIFEST_BYTES = 16 << 20
_MAX_JSON_DEPTH = 64
#: the most arrays one artifact may declare (a Pipeline of every step holds under 100),
#: and what each costs to check and hold besides its bytes (manifest entry, zip entry,
#: array object), charged for all of them before any is read
MAX_ARRAYS = 4096
ARRAY_OVERHEAD_BYTES = 4 << 10
#: the most artifacts a bundle may hold, and what loading one costs besides its arrays
#: (its manifest, checks and rebuilt estimator), charged for all before any is read
MAX_BUNDLE_ENTRIES = 10_000
BUNDLE_ENTRY_BYTES = 64 << 10
_ALLOWED_KINDS = set("biuf")  # bool, signed/unsigned int, float: no object / string arrays


def _library_versions() -> Dict[str, str]:
    import numba
    import scipy
    import sklearn

    from featagg_core import __version__
    return {"featagg": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "numba": numba.__version__}


def _class_name(obj) -> str:
    name = type(obj).__name__
    if name not in ARTIFACT_CLASSES or ARTIFACT_CLASSES[name] != type(obj).__module__:
        raise ArtifactError(
            f"cannot save an object of type {type(obj).__module__}.{name}: only "
            f"{', '.join(sorted(ARTIFACT_CLASSES))} are featagg artifacts")
    if not hasattr(obj, "_artifact_state"):
        raise ArtifactError(f"{name} does not implement _artifact_state()")
    return name


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"value of type {type(value).__name__} is not JSON-serialisable")


def artifact_bytes(obj, *, dataset_fingerprint: Optional[str] = None,
                   metrics: Optional[Dict[str, Any]] = None) -> bytes:
    """Serialise a fitted estimator to the bytes of an artifact file (for downloads).

    Parameters
    ----------
    obj : estimator
        A fitted estimator of ``ARTIFACT_CLASSES``.
    dataset_fingerprint : str, optional
        The fingerprint of the dataset the model was fitted on (stored in the manifest).
    metrics : dict, optional
        Scores to keep with the model (JSON-serialisable).

    Returns
    -------
    bytes
        The artifact (a zip of ``manifest.json`` and one ``.npy`` per array).

    Raises
    ------
    ArtifactError
        When ``obj`` is not fitted, not a known class, or its state is not serialisable.
    """
    name = _class_name(obj)
    try:
        meta, arrays = obj._artifact_state()
    except AttributeError as exc:  # typically: not fitted yet
        raise ArtifactError(f"cannot save {name}: {exc}") from exc
    params = obj.get_params(deep=False)
    checked: Dict[str, np.ndarray] = {}
    for key, arr in arrays.items():
        arr = np.asarray(arr)
        if arr.dtype.kind not in _ALLOWED_KINDS:
            raise ArtifactError(f"array {key!r} of {name} has dtype {arr.dtype}; "
                                "artifacts hold numeric arrays only")
        checked[key] = np.ascontiguousarray(arr)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": name,
        "params": params,
        "meta": meta,
        "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": _sha256(a)}
                   for k, a in checked.items()},
        "library": _library_versions(),
        "dataset_fingerprint": dataset_fingerprint,
        "metrics": metrics or {},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        # the digest is taken over the JSON round trip, i.e. exactly what a load will see
        manifest["state_sha256"] = _state_digest(json.loads(json.dumps(
            manifest, default=_json_default)))
        manifest_text = json.dumps(manifest, default=_json_default, indent=1, sort_keys=True)
    except TypeError as exc:
        raise ArtifactError(f"cannot save {name}: parameters or state are not "
                            f"JSON-serialisable ({exc})") from exc
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", manifest_text)
        for key, arr in checked.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            zf.writestr(f"arrays/{key}.npy", member.getvalue())
    return buf.getvalue()


def save_artifact(obj, path, *, dataset_fingerprint: Optional[str] = None,
                  metrics: Optional[Dict[str, Any]] = None) -> None:
    """Save a fitted estimator to ``path`` (a file path or a writable binary file object).

    A path is written atomically (temporary file in the same folder, then ``os.replace``),
    so an interrupted save never leaves a half-written artifact behind.

    Parameters
    ----------
    obj : estimator
        A fitted estimator of ``ARTIFACT_CLASSES``.
    path : str, os.PathLike or writable binary file object
        Where to write.
    dataset_fingerprint : str, optional
        The fingerprint of the dataset the model was fitted on (stored in the manifest).
    metrics : dict, optional
        Scores to keep with the model (JSON-serialisable).

    Raises
    ------
    ArtifactError
        As :func:`artifact_bytes`.
    """
    data = artifact_bytes(obj, dataset_fingerprint=dataset_fingerprint, metrics=metrics)
    if hasattr(path, "write"):
        path.write(data)
        return
    _atomic_write_bytes(path, data)


def _atomic_write_bytes(path, data: bytes) -> None:
    """Atomic write (temporary file beside ``path`` + ``os.replace``), as the data writers do."""
    from featagg_core.data import _atomic_write
    _atomic_write(path, lambda fh: fh.write(data))


def _read_source(path_or_file) -> Tuple[bytes, str]:
    if hasattr(path_or_file, "read"):
        name = getattr(path_or_file, "name", "<uploaded artifact>")
        data = path_or_file.getvalue() if hasattr(path_or_file, "getvalue") else path_or_file.read()
        return bytes(data), str(name)
    path = os.fspath(path_or_file)
    try:
        with open(path, "rb") as fh:
            return fh.read(), path
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read artifact ({exc.strerror or exc})") from exc


@fill_doc
def read_manifest(path_or_file, *, max_bytes: Optional[int] = None) -> Dict[str, Any]:
    """The checked manifest of an artifact, without rebuilding the estimator.

    Parameters
    ----------
    {artifact_read_args}

    Returns
    -------
    dict
        The manifest (class, params, meta, array descriptions, versions, metrics).

    Raises
    ------
    ArtifactError
        When the file is not a valid featagg artifact.
    """
    manifest, _ = _open_checked(path_or_file, Budget(max_bytes))
    return manifest


def _failer(where: str, what: str = ""):
    def fail(message: str):
        raise ArtifactError(f"{where}: {what}{message}")
    return fail


def _open_zip(path_or_file, what: str, budget: Budget) -> Tuple[zipfile.ZipFile, str]:
    """The input as an open zip archive (and its printable name); refuses empty files,
    non-zip or truncated data, duplicate member names, encrypted members and compression
    methods other than stored/deflated (see :func:`featagg_core.utils.bounded.open_zip`).

    The members the archive declares are counted from its end record before its
    directory is parsed: an artifact holds at most :data:`MAX_ARRAYS` arrays, a bundle
    :data:`MAX_BUNDLE_ENTRIES` artifacts, and what loading each would cost
    (:data:`ARRAY_OVERHEAD_BYTES`, :data:`BUNDLE_ENTRY_BYTES`) is charged to ``budget``
    for all of them at once, so a refusal gives the whole figure."""
    if not hasattr(path_or_file, "read"):
        # a file on disk (the command line): its members are counted from its end record
        # before the whole file is read into memory
        path = os.fspath(path_or_file)
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                count = zip_member_count(fh)
        except OSError as exc:
            raise ArtifactError(f"{path}: cannot read artifact ({exc.strerror or exc})") \
                from exc
        probe = Budget(budget.max_bytes)
        probe.add_input(budget.input_bytes + size)
        probe.used = budget.used
        _charge_members(count, what, probe, path)
    data, where = _read_source(path_or_file)
    if not data:
        raise ArtifactError(f"{where}: the file is empty")
    budget.add_input(len(data))
    fail = _failer(where, f"not a featagg {what}: ")
    _charge_members(zip_member_count(data), what, budget, where)
    zf = open_zip(data, fail, what=f"featagg {what}", budget=budget,
                  max_members=MAX_BUNDLE_ENTRIES + 1 if what == "bundle" else MAX_ARRAYS + 1)
    return zf, where


def _charge_members(count: Optional[int], what: str, budget: Budget, where: str) -> None:
    """Charge what loading the ``count`` members an archive declares would cost (an
    artifact's arrays, a bundle's artifacts) and refuse more than the format holds."""
    if count is None:
        return
    limit, each, unit = ((MAX_BUNDLE_ENTRIES, BUNDLE_ENTRY_BYTES, "artifacts")
                         if what == "bundle" else (MAX_ARRAYS, ARRAY_OVERHEAD_BYTES, "arrays"))
    n = max(count - 1, 0)                        # bundle.json / manifest.json
    budget.charge(n * each, f"its {n:,} {unit}", _failer(where, f"this featagg {what}: "))
    if n > limit:
        raise ArtifactError(f"{where}: this featagg {what} holds {n:,} {unit}; at most "
                            f"{limit:,} are read")


def _read_json_member(zf: zipfile.ZipFile, member: str, where: str, missing: str,
                      budget: Budget) -> Any:
    """Parse the JSON member ``member`` (size and nesting bounded); ``missing`` is the
    message when it is absent."""
    if member_info(zf, member) is None:
        raise ArtifactError(f"{where}: {missing}")
    fail = _failer(where)
    raw = read_member(zf, member, budget, fail, limit=min(_MAX_MANIFEST_BYTES, budget.allowance))
    return loads_json(raw, member, fail, max_depth=_MAX_JSON_DEPTH)


_ARRAY_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}")
_DTYPE_TEXT = re.compile(r"[<>|=]?[biuf][1248]|[<>|=]?b1|\|?b1|[<>|=]?f16")


def _array_spec(key, spec, where: str):
    """(shape, dtype, sha256) of a manifest ``arrays`` entry, every part type-checked."""
    if not isinstance(key, str) or not _ARRAY_NAME.fullmatch(key):
        raise ArtifactError(f"{where}: manifest names an array {str(key)[:60]!r} (names are "
                            "1-200 letters, digits, '_', '.', '-')")
    if not isinstance(spec, dict) or set(spec) != {"shape", "dtype", "sha256"}:
        raise ArtifactError(f"{where}: manifest entry for array {key!r} is malformed")
    shape, dtype, digest = spec["shape"], spec["dtype"], spec["sha256"]
    if not isinstance(shape, list) or len(shape) > 4 or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**40 for s in shape):
        raise ArtifactError(f"{where}: manifest entry for array {key!r} has a malformed "
                            f"shape {str(shape)[:60]}")
    if not isinstance(dtype, str) or not _DTYPE_TEXT.fullmatch(dtype):
        raise ArtifactError(f"{where}: manifest entry for array {key!r} has dtype "
                            f"{str(dtype)[:30]!r}; artifacts hold numeric arrays only")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ArtifactError(f"{where}: manifest entry for array {key!r} has a malformed "
                            "checksum")
    return tuple(shape), np.dtype(dtype), digest


def _check_informational(manifest: Dict[str, Any], where: str) -> None:
    """The fields only shown to people must still have the types the pages expect."""
    lib = manifest.get("library", {})
    if not isinstance(lib, dict) or not all(isinstance(v, str) for v in lib.values()):
        raise ArtifactError(f"{where}: manifest field 'library' is malformed")
    metrics = manifest.get("metrics") or {}
    if not isinstance(metrics, dict) or not all(
            isinstance(v, (int, float, str, bool)) or v is None for v in metrics.values()):
        raise ArtifactError(f"{where}: manifest field 'metrics' is malformed")
    for key in ("created", "dataset_fingerprint"):
        if not isinstance(manifest.get(key), (str, type(None))):
            raise ArtifactError(f"{where}: manifest field {key!r} is malformed")


def _state_digest(manifest: Dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of what the estimator is rebuilt from (class, params,
    meta and the array specs, whose checksums cover the array bytes). Written into the
    manifest as ``state_sha256``: an edited or damaged manifest is refused outright. It is
    no signature (anyone can recompute it); the checks of :mod:`featagg_core.artifacts.checks` are
    what make a forged file harmless."""
    core = {k: manifest.get(k) for k in ("format", "format_version", "class", "params",
                                           "meta", "arrays")}
    text = json.dumps(core, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _open_checked(path_or_file, budget: Budget) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    zf, where = _open_zip(path_or_file, "artifact", budget)
    with zf:
        manifest = _read_json_member(zf, "manifest.json", where, "manifest.json is missing",
                                     budget)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArtifactError(f"{where}: manifest does not describe a featagg artifact")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise ArtifactError(f"{where}: unsupported artifact format version {version!r} "
                                f"(this featagg reads version {FORMAT_VERSION})")
        cls_name = manifest.get("class")
        if not isinstance(cls_name, str) or cls_name not in ARTIFACT_CLASSES:
            raise ArtifactError(f"{where}: unknown artifact class {str(cls_name)[:60]!r}")
        for key in ("params", "meta", "arrays"):
            if not isinstance(manifest.get(key), dict):
                raise ArtifactError(f"{where}: manifest field {key!r} is missing or malformed")
        _check_informational(manifest, where)
        if len(manifest["arrays"]) > MAX_ARRAYS:
            raise ArtifactError(f"{where}: the manifest declares {len(manifest['arrays']):,} "
                                f"arrays; an artifact holds at most {MAX_ARRAYS:,}")
        specs = {key: _array_spec(key, spec, where) for key, spec in manifest["arrays"].items()}
        members = {f"arrays/{key}.npy": key for key in specs}
        for name in iter_names(zf):
            if name != "manifest.json" and name not in members:
                raise ArtifactError(f"{where}: member {name[:80]!r} is not part of a featagg "
                                    "artifact")
        total = 0
        for member in members:
            info = member_info(zf, member)
            if info is None:
                raise ArtifactError(f"{where}: array {members[member]!r} is missing from the "
                                    "archive")
            total += info.file_size
        budget.charge(total, "the arrays", _failer(where))
        budget.used -= total          # charged again, member by member, while reading
        arrays: Dict[str, np.ndarray] = {}
        for member, key in members.items():
            shape, dtype, digest = specs[key]
            arr = read_npy_member(zf, member, budget,
                                  _failer(where, f"array {key!r} is unreadable: "))
            if arr.shape != shape:
                raise ArtifactError(f"{where}: array {key!r} has shape {arr.shape}, "
                                    f"manifest says {shape}")
            if arr.dtype != dtype:
                raise ArtifactError(f"{where}: array {key!r} has dtype {arr.dtype}, "
                                    f"manifest says {dtype}")
            if _sha256(arr) != digest:
                raise ArtifactError(f"{where}: array {key!r} does not match its checksum "
                                    "(the file was modified or damaged)")
            arrays[key] = arr
        stated = manifest.get("state_sha256")
        if stated is not None and stated != _state_digest(manifest):
            raise ArtifactError(f"{where}: manifest.json does not match its checksum "
                                "state_sha256 (the file was edited or damaged)")
        validate_state(cls_name, manifest["params"], manifest["meta"], arrays,
                       f"{where}", ArtifactError, CHECKS)
    return manifest, arrays


def load_artifact(path_or_file, *, max_bytes: Optional[int] = None, _budget=None):
    """Load a fitted estimator saved by :func:`save_artifact`.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file object (e.g. a Streamlit upload)
    max_bytes : int, optional
        Most bytes the load may inflate (default ``FEATAGG_MAX_LOAD_MB`` or 1 GiB; a load
        never inflates more than 50x the file beyond 64 MiB either).

    Returns
    -------
    The fitted estimator; its manifest is attached as ``artifact_manifest_``.

    Raises
    ------
    ArtifactError
        When the file is not a featagg artifact, has an unknown format version or
        class, any array is missing, mis-shaped, of the wrong dtype or tampered with, or
        the state is not one the class can use (every field and array is validated by
        :mod:`featagg_core.artifacts.checks` before the estimator is rebuilt).
        Nothing else escapes.
    """
    budget = _budget if _budget is not None else Budget(max_bytes)
    manifest, arrays = _open_checked(path_or_file, budget)
    cls_name = manifest["class"]
    cls = artifact_class(cls_name)
    try:
        obj = cls._from_artifact_state(manifest["params"], manifest["meta"], arrays)
    except ArtifactError:
        raise
    except MemoryError as exc:
        raise ArtifactError(f"artifact of class {cls_name}: not enough memory to "
                            "rebuild it") from exc
    except Exception as exc:  # noqa: BLE001 - the contract: only ArtifactError escapes
        raise ArtifactError(f"artifact of class {cls_name} is inconsistent: "
                            f"{reason(exc)}") from exc
    obj.artifact_manifest_ = manifest
    return obj


BUNDLE_FORMAT = "featagg-bundle"


def bundle_bytes(objects: Dict[str, Any], *, info: Optional[Dict[str, Any]] = None,
                 dataset_fingerprint: Optional[str] = None) -> bytes:
    """Several fitted objects in one zip: ``bundle.json`` + one artifact file per name.

    Parameters
    ----------
    objects : dict of str to estimator
        Maps a role or run name (letters, digits, ``-_.``) to a fitted estimator.
    info : dict, optional
        Any JSON-serialisable description (e.g. the run registry).
    dataset_fingerprint : str, optional
        The fingerprint of the dataset the model was fitted on (stored in the manifest).

    Returns
    -------
    bytes
        The bundle.

    Raises
    ------
    ArtifactError
        For a bad name or an object that cannot be saved.
    """
    import re
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, obj in objects.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", key):
                raise ArtifactError(f"bundle entry name {key!r} must be 1-100 letters, digits, '-', '_' or '.'")
            zf.writestr(f"artifacts/{key}.fgz",
                        artifact_bytes(obj, dataset_fingerprint=dataset_fingerprint))
        index = {"format": BUNDLE_FORMAT, "format_version": FORMAT_VERSION,
                 "entries": list(objects), "info": info or {}}
        zf.writestr("bundle.json", json.dumps(index, default=_json_default, indent=1))
    return buf.getvalue()


def save_bundle(objects: Dict[str, Any], path, **kw) -> None:
    """Write :func:`bundle_bytes` to ``path`` atomically (see :func:`save_artifact`).

    Parameters
    ----------
    objects : dict of str to estimator
        Maps a name to a fitted estimator.
    path : str or os.PathLike
        Where to write.
    **kw
        ``info`` and ``dataset_fingerprint`` of :func:`bundle_bytes`.

    Raises
    ------
    ArtifactError
        As :func:`bundle_bytes`.
    """
    _atomic_write_bytes(path, bundle_bytes(objects, **kw))


@fill_doc
def is_bundle(path_or_file) -> bool:
    """Whether the file is a bundle (has ``bundle.json``).

    Parameters
    ----------
    {artifact_file}

    Returns
    -------
    bool
        True for a bundle, False for a single artifact (or anything that is not a readable
        zip: loading it then says what is wrong).
    """
    if not hasattr(path_or_file, "read"):
        # a file on disk: only its directory is read (never the whole file); for an
        # archive with too many members to parse, a search of the directory's last part
        # (a bundle writes bundle.json last)
        try:
            with open(os.fspath(path_or_file), "rb") as fh:
                found = zip_directory(fh)
                if found is None:
                    return False
                count, cd_off, cd_size = found
                if count > MAX_ARRAYS + 1:
                    span = min(cd_size, 1 << 16)
                    fh.seek(cd_off + cd_size - span)
                    return fh.read(span).find(b"bundle.json") >= 0
                fh.seek(0)
                with zipfile.ZipFile(fh) as zf:
                    return "bundle.json" in zf.namelist()
        except Exception:  # noqa: BLE001 - unreadable: not a bundle; load_artifact explains
            return False
    data, _ = _read_source(path_or_file)
    count = zip_member_count(data)
    if count is None:
        return False
    if count > MAX_ARRAYS + 1:
        # too many members to parse the directory here (load_bundle / load_artifact refuse
        # it with the figure): a name search is enough to say which it would be
        return b"bundle.json" in data
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return "bundle.json" in zf.namelist()
    except Exception:  # noqa: BLE001 - any damage: not a bundle; load_artifact explains
        return False


@fill_doc
def load_bundle(path_or_file, *, max_bytes: Optional[int] = None
                ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Load a bundle written by :func:`save_bundle` / :func:`bundle_bytes`.

    Each entry is checked as in :func:`load_artifact`; the whole bundle shares one budget
    (``max_bytes``).

    Parameters
    ----------
    {artifact_read_args}

    Returns
    -------
    objects : dict of str to estimator
        The fitted objects by name.
    info : dict
        The bundle's description.

    Raises
    ------
    ArtifactError
        When the bundle or any entry is not valid (see :func:`load_artifact`).
    """
    budget = Budget(max_bytes)
    zf, where = _open_zip(path_or_file, "bundle", budget)
    with zf:
        index = _read_json_member(zf, "bundle.json", where,
                                  "bundle.json is missing (is this a single artifact?)", budget)
        if not isinstance(index, dict) or index.get("format") != BUNDLE_FORMAT:
            raise ArtifactError(f"{where}: bundle.json does not describe a featagg bundle")
        if index.get("format_version") != FORMAT_VERSION:
            raise ArtifactError(f"{where}: unsupported bundle format version "
                                f"{str(index.get('format_version'))[:30]!r}")
        entries = index.get("entries", [])
        if isinstance(entries, list) and len(entries) > MAX_BUNDLE_ENTRIES:
            raise ArtifactError(f"{where}: bundle.json lists {len(entries):,} artifacts; a "
                                f"bundle holds at most {MAX_BUNDLE_ENTRIES:,}")
        if not isinstance(entries, list) or len(set(map(str, entries))) != len(entries) \
                or not all(isinstance(k, str) and _ARRAY_NAME.fullmatch(k) for k in entries):
            raise ArtifactError(f"{where}: bundle.json 'entries' must list distinct names")
        info = index.get("info", {})
        if not isinstance(info, dict):
            raise ArtifactError(f"{where}: bundle.json 'info' is malformed")
        wanted = {f"artifacts/{key}.fgz" for key in entries} | {"bundle.json"}
        for name in iter_names(zf):
            if name not in wanted:
                raise ArtifactError(f"{where}: member {name[:80]!r} is not part of the bundle")
        objects = {}
        for key in entries:
            member = f"artifacts/{key}.fgz"
            if member_info(zf, member) is None:
                raise ArtifactError(f"{where}: entry {key!r} is missing from the bundle")
            entry = io.BytesIO(read_member(zf, member, budget, _failer(where, f"entry {key!r}: ")))
            entry.name = f"{where}:{key}"
            objects[key] = load_artifact(entry, _budget=budget)
    return objects, info
